// pfc_config and pfc_watchdog on a running lab switch, driven through the real injectors and
// adapters (DCB netlink, the PFC agent's settings file and SIGHUP), proved from outside:
// - tshark on the switch port sees h1's pause frames arrive whatever the setting;
// - pings from h0 to h1 with DSCP 26 (the lossless class) are held for the pause, or not;
// - reverting restores the exact setting, and the next pause holds the class again.
// The lab: `lab up --hosts 3 --link-rate 20mbit --buffer 256k --pfc` (tests/privileged/pfc_lab.h),
// its switch's PFC agent started without a watchdog.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "injectors/pfc/pfc_config.h"
#include "injectors/pfc/pfc_watchdog.h"
#include "injectors/sys/dcb.h"
#include "injectors/sys/pfc_switch_control.h"
#include "tests/privileged/pfc_capture.h"
#include "tests/privileged/pfc_lab.h"

namespace fabric_chaos::testing {
namespace {

using injectors::Fault;
using injectors::InterfaceTarget;
using nlohmann::json;

class PfcSettingsLab : public PfcHonouringLab {
 protected:
  // Pings for `count` x 5 ms with one frame of 65535 quanta from h1 500 ms in; the lossless and
  // best-effort replies.
  std::pair<std::vector<Reply>, std::vector<Reply>> pingThroughOneFrame(int count) {
    startPings(count);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    sendOneFrame(65535);
    waitForPings();
    return {replies(dir_ + "/ping-lossless"), replies(dir_ + "/ping-best-effort")};
  }

  std::unique_ptr<sys::Dcb> dcb_ = sys::makeKernelDcb();
  std::unique_ptr<sys::PfcSwitchControl> switches_ = sys::makeProcessPfcSwitchControl();
};

TEST_F(PfcSettingsLab, PfcConfigTakesPfcOffTheSwitchPortAndItsRevertPutsItBack) {
  injectors::PfcConfig config(dcb_.get(), switches_.get());
  const Fault fault{"pfc_config", InterfaceTarget{"fcl-sw0", "p1"}, {{"disable", {3}}}};
  auto prior = config.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().message();
  EXPECT_EQ(*prior, (json{{"backend", "lab_switch"}, {"pfc_enabled", 0xff}}));
  const auto applied_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(config.apply(fault).isOk());
  const auto apply_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - applied_at)
                            .count();

  // PFC off on priority 3: the frame arrives (tshark) and holds nothing.
  PfcCapture capture(dir_, "fcl-sw0", "p1");
  ASSERT_TRUE(capture.started());
  const auto [off_lossless, off_best_effort] = pingThroughOneFrame(300);
  const json off = agentCounters("p1");

  ASSERT_TRUE(config.revert(fault, *prior).isOk());
  const auto [on_lossless, on_best_effort] = pingThroughOneFrame(600);
  capture.stop();
  const json on = agentCounters("p1");
  std::cout << "pfc_config: applied in " << apply_ms << " ms; PFC off: DSCP-26 ping max "
            << maxRtt(off_lossless) << " ms, pause frames ignored " << off["rx_prio3_pause_ignored"]
            << "; back on: max " << maxRtt(on_lossless) << " ms; tshark saw "
            << capture.frames().size() << " frames on p1\n";
  ASSERT_EQ(capture.frames().size(), 2u) << "both frames reached the port";
  EXPECT_EQ(off.value("pfc_enabled", -1), 0xf7);
  EXPECT_EQ(off.value("rx_prio3_pause_ignored", -1), 1);
  EXPECT_EQ(off.value("rx_prio3_pause", -1), 0);
  EXPECT_LT(maxRtt(off_lossless), 100) << "a pause was honoured on a priority with PFC off";
  EXPECT_GE(off_lossless.size(), 295u);
  EXPECT_EQ(on.value("pfc_enabled", -1), 0xff);
  EXPECT_EQ(on.value("rx_prio3_pause", -1), 1);
  EXPECT_GE(maxRtt(on_lossless), 0.9 * kFullPauseS * 1000) << "the revert did not restore PFC";
  EXPECT_LT(maxRtt(on_best_effort), 100);
}

TEST_F(PfcSettingsLab, APfcWatchdogSetForAStepActsOnlyWhileItIsInForce) {
  injectors::PfcWatchdog watchdog(switches_.get());
  const Fault fault{"pfc_watchdog",
                    InterfaceTarget{"fcl-sw0", "p1"},
                    {{"action", "forward"}, {"detection_ms", 200}, {"restoration_ms", 200}}};
  auto prior = watchdog.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().message();
  EXPECT_EQ(*prior, (json{{"watchdog", nullptr}}));
  ASSERT_TRUE(watchdog.apply(fault).isOk());
  EXPECT_EQ(agentCounters("p1").value("watchdog", ""), "forward:200:200");

  // In force: a 1.5 s storm holds the lossless class for the detection time only.
  ASSERT_NO_FATAL_FAILURE(pingThroughSteadyStorm());
  const auto watched = replies(dir_ + "/ping-lossless");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the restoration time
  const json during = agentCounters("p1");

  // Reverted: the same storm holds the class for all of it.
  ASSERT_TRUE(watchdog.revert(fault, *prior).isOk());
  EXPECT_TRUE(agentCounters("p1")["watchdog"].is_null());
  ASSERT_NO_FATAL_FAILURE(pingThroughSteadyStorm());
  const auto unwatched = replies(dir_ + "/ping-lossless");
  const json after = agentCounters("p1");
  std::cout << "pfc_watchdog forward for a step: DSCP-26 ping max " << maxRtt(watched)
            << " ms with it, " << maxRtt(unwatched) << " ms after its revert; storms detected "
            << after["pfcwd_prio3_storm_detected"] << "\n";
  EXPECT_GE(maxRtt(watched), 180);
  EXPECT_LE(maxRtt(watched), 260) << "the watchdog did not end the pause at its detection time";
  EXPECT_EQ(during.value("pfcwd_prio3_storm_detected", -1), 1);
  EXPECT_GE(maxRtt(unwatched), 1300) << "the storm was cut short without a watchdog";
  EXPECT_EQ(after.value("pfcwd_prio3_storm_detected", -1), 1) << "a storm detected after revert";
}

TEST_F(PfcSettingsLab, AHostNicWithoutDcbAndAPortTheAgentLacksAreRefusedAndChangeNothing) {
  injectors::PfcConfig config(dcb_.get(), switches_.get());
  const std::string settings_before = readFile(dir_ + "/state/pfc/fcl-sw0.settings.json");
  auto on_veth =
      config.capture(Fault{"pfc_config", InterfaceTarget{"fcl-h1", "eth0"}, {{"disable", {3}}}});
  EXPECT_EQ(on_veth.status().code(), core::StatusCode::kNotSupported);
  EXPECT_NE(on_veth.status().message().find("EOPNOTSUPP"), std::string::npos)
      << on_veth.status().message();
  EXPECT_EQ(runShell("ip netns exec fcl-h1 dcb pfc show dev eth0 2>&1").out.find("not supported") !=
                std::string::npos,
            true)
      << "iproute2's dcb agrees the veth has no DCB";
  EXPECT_EQ(switches_->setPfcEnabled("fcl-sw0", "p9", 0).code(), core::StatusCode::kNotFound);
  EXPECT_EQ(switches_->read("fcl-h1", "eth0").status().code(), core::StatusCode::kNotFound);
  EXPECT_EQ(readFile(dir_ + "/state/pfc/fcl-sw0.settings.json"), settings_before);
  std::cout << "pfc_config on h1's veth: " << on_veth.status().message() << "\n";
}

TEST_F(PfcSettingsLab, TheAgentRefusesABrokenSettingsFileAndKeepsWhatIsInForce) {
  const std::string path = dir_ + "/state/pfc/fcl-sw0.settings.json";
  const std::string good = readFile(path);
  {
    std::ofstream out(path, std::ios::trunc);
    out << R"({"generation": 7, "ports": {"p1": {"pfc_enabled": 999}}})";
  }
  runShell("pkill -HUP -f '[p]fc-switch --ports'");
  ASSERT_TRUE(waitFor(
      [&] {
        return json::parse(readFile(dir_ + "/state/pfc/fcl-sw0.json"), nullptr, false)
            .contains("settings_error");
      },
      3000));
  const json stats = json::parse(readFile(dir_ + "/state/pfc/fcl-sw0.json"), nullptr, false);
  std::cout << "pfc-switch on a broken settings file: " << stats["settings_error"] << "\n";
  EXPECT_NE(stats["settings_error"].get<std::string>().find("pfc_enabled"), std::string::npos);
  EXPECT_EQ(stats.value("settings_generation", -1), 0);
  EXPECT_EQ(stats["ports"]["p1"].value("pfc_enabled", -1), 0xff);
  {
    std::ofstream out(path, std::ios::trunc);
    out << good;
  }
  // A writer that finds the refusal reports it instead of waiting for a generation that never
  // comes; the next good change clears it.
  ASSERT_TRUE(switches_->setPfcEnabled("fcl-sw0", "p1", 0xff).isOk());
  const json healed = json::parse(readFile(dir_ + "/state/pfc/fcl-sw0.json"), nullptr, false);
  EXPECT_FALSE(healed.contains("settings_error"));
  EXPECT_EQ(healed.value("settings_generation", -1), 1);
}

}  // namespace
}  // namespace fabric_chaos::testing
