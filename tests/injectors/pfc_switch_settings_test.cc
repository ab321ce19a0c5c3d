// The lab switch PFC agent's settings file: its JSON both ways, and the refusal of malformed
// files naming the field (the agent reports that reason instead of applying anything).

#include "injectors/model/pfc_switch_settings.h"

#include <gtest/gtest.h>

namespace fabric_chaos::injectors {
namespace {

TEST(PfcSwitchSettings, RoundTripsThroughJson) {
  PfcSwitchSettings settings;
  settings.generation = 3;
  settings.ports["p1"] = {0xf7, PfcWatchdogConfig{PfcWatchdogAction::kDrop, 200, 400}};
  settings.ports["p2"] = {0xff, std::nullopt};
  const nlohmann::json doc = toJson(settings);
  EXPECT_EQ(doc, nlohmann::json::parse(R"({"generation": 3, "ports": {
      "p1": {"pfc_enabled": 247, "watchdog": "drop:200:400"},
      "p2": {"pfc_enabled": 255, "watchdog": null}}})"));
  auto back = pfcSwitchSettingsFromJson(doc);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, settings);
}

TEST(PfcSwitchSettings, RefusesMalformedFilesNamingTheField) {
  auto message = [](const char* text) {
    return pfcSwitchSettingsFromJson(nlohmann::json::parse(text)).status().message();
  };
  EXPECT_EQ(message(R"({"ports": {}})"), "generation: must be a non-negative integer");
  EXPECT_EQ(message(R"({"generation": 1})"), "ports: must be an object");
  EXPECT_EQ(message(R"({"generation": 1, "ports": {"p1": {"pfc_enabled": 256}}})"),
            "ports.p1: pfc_enabled: must be an integer 0-255 (a bit per priority)");
  EXPECT_EQ(message(R"({"generation": 1, "ports": {"p1": {"pfc_enabled": 8, "watchdog": 5}}})"),
            "ports.p1: watchdog: must be a string or null");
  EXPECT_EQ(
      message(R"({"generation": 1, "ports": {"p1": {"pfc_enabled": 8, "watchdog": "drop:50"}}})"),
      "ports.p1: watchdog: --pfc-watchdog: the detection time must be 100 to 5000 ms, got \"50\"");
}

}  // namespace
}  // namespace fabric_chaos::injectors
