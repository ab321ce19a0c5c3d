#include "injectors/model/pfc_switch_settings.h"

#include "core/file_replace.h"

namespace fabric_chaos::injectors {
namespace {

core::Status invalid(const std::string& field, const std::string& message) {
  return core::Status(core::StatusCode::kInvalidArgument, field + ": " + message);
}

}  // namespace

nlohmann::json toJson(const PfcPortSettings& port) {
  return {{"pfc_enabled", port.pfc_enabled},
          {"watchdog", port.watchdog ? nlohmann::json(formatPfcWatchdog(*port.watchdog))
                                     : nlohmann::json(nullptr)}};
}

nlohmann::json toJson(const PfcSwitchSettings& settings) {
  nlohmann::json ports = nlohmann::json::object();
  for (const auto& [name, port] : settings.ports) ports[name] = toJson(port);
  return {{"generation", settings.generation}, {"ports", ports}};
}

core::Result<PfcPortSettings> pfcPortSettingsFromJson(const nlohmann::json& doc) {
  if (!doc.is_object()) return invalid("port", "must be an object");
  PfcPortSettings port;
  auto enabled = doc.find("pfc_enabled");
  if (enabled == doc.end() || !enabled->is_number_integer() || *enabled < 0 || *enabled > 255) {
    return invalid("pfc_enabled", "must be an integer 0-255 (a bit per priority)");
  }
  port.pfc_enabled = static_cast<uint8_t>(enabled->get<int>());
  auto watchdog = doc.find("watchdog");
  if (watchdog != doc.end() && !watchdog->is_null()) {
    if (!watchdog->is_string()) return invalid("watchdog", "must be a string or null");
    auto config = parsePfcWatchdog(watchdog->get<std::string>());
    if (!config.isOk()) return invalid("watchdog", config.status().message());
    port.watchdog = *config;
  }
  return port;
}

core::Result<PfcSwitchSettings> pfcSwitchSettingsFromJson(const nlohmann::json& doc) {
  if (!doc.is_object()) return invalid("settings", "must be an object");
  PfcSwitchSettings settings;
  auto generation = doc.find("generation");
  if (generation == doc.end() || !generation->is_number_integer() || *generation < 0) {
    return invalid("generation", "must be a non-negative integer");
  }
  settings.generation = generation->get<int64_t>();
  auto ports = doc.find("ports");
  if (ports == doc.end() || !ports->is_object()) return invalid("ports", "must be an object");
  for (const auto& [name, value] : ports->items()) {
    auto port = pfcPortSettingsFromJson(value);
    if (!port.isOk()) return invalid("ports." + name, port.status().message());
    settings.ports[name] = *port;
  }
  return settings;
}

core::Result<PfcSwitchSettings> readPfcSwitchSettings(const std::string& path) {
  auto text = core::readWholeFile(path);
  if (!text.isOk()) return text.status();
  const auto doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return invalid(path, "not JSON");
  auto settings = pfcSwitchSettingsFromJson(doc);
  if (!settings.isOk()) return invalid(path, settings.status().message());
  return settings;
}

}  // namespace fabric_chaos::injectors
