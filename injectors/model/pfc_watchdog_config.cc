#include "injectors/model/pfc_watchdog_config.h"

#include <charconv>
#include <vector>

namespace fabric_chaos::injectors {
namespace {

core::Status invalid(const std::string& message) {
  return core::Status(core::StatusCode::kInvalidArgument, "--pfc-watchdog: " + message);
}

core::Result<int64_t> milliseconds(const std::string& text, const char* what, int64_t min,
                                   int64_t max) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return invalid(std::string(what) + " must be " + std::to_string(min) + " to " +
                   std::to_string(max) + " ms, got \"" + text + "\"");
  }
  return value;
}

}  // namespace

const char* pfcWatchdogActionName(PfcWatchdogAction action) {
  switch (action) {
    case PfcWatchdogAction::kDrop:
      return "drop";
    case PfcWatchdogAction::kForward:
      return "forward";
    case PfcWatchdogAction::kAlert:
      return "alert";
  }
  return "drop";
}

std::optional<PfcWatchdogAction> parsePfcWatchdogAction(const std::string& name) {
  if (name == "drop") return PfcWatchdogAction::kDrop;
  if (name == "forward") return PfcWatchdogAction::kForward;
  if (name == "alert") return PfcWatchdogAction::kAlert;
  return std::nullopt;
}

core::Result<PfcWatchdogConfig> parsePfcWatchdog(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return invalid("expected ACTION[:DETECTION_MS[:RESTORATION_MS]]");
  PfcWatchdogConfig config;
  const auto action = parsePfcWatchdogAction(parts[0]);
  if (!action) {
    return invalid("the action must be drop, forward or alert, got \"" + parts[0] + "\"");
  }
  config.action = *action;
  if (parts.size() > 1) {
    auto detection = milliseconds(parts[1], "the detection time", kPfcWatchdogMinDetectionMs,
                                  kPfcWatchdogMaxDetectionMs);
    if (!detection.isOk()) return detection.status();
    config.detection_ms = *detection;
  }
  if (parts.size() > 2) {
    auto restoration = milliseconds(parts[2], "the restoration time", kPfcWatchdogMinRestorationMs,
                                    kPfcWatchdogMaxRestorationMs);
    if (!restoration.isOk()) return restoration.status();
    config.restoration_ms = *restoration;
  }
  return config;
}

std::string formatPfcWatchdog(const PfcWatchdogConfig& config) {
  return std::string(pfcWatchdogActionName(config.action)) + ":" +
         std::to_string(config.detection_ms) + ":" + std::to_string(config.restoration_ms);
}

}  // namespace fabric_chaos::injectors
