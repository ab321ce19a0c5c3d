#include "injectors/model/pfc_storm_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& pfcStormSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "pfc_storm";
    s.summary =
        "Sends IEEE 802.1Qbb PFC pause frames from an interface for the step's window: a NIC or "
        "port stuck pausing its peer, the lossless fabric's most feared failure.";
    s.resource = "pfc_emitter";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kLongRunning;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"priorities",
         ParamType::kIntegerList,
         "",
         0,
         false,
         7,
         {},
         true,
         nullptr,
         "802.1p priorities to pause (RoCE's lossless class is usually 3)"},
        {"quanta",
         ParamType::kInteger,
         "quanta",
         0,
         false,
         65535,
         {},
         false,
         65535,
         "pause time per frame, in quanta of 512 bit times (65535 = 3.36 ms at 10 Gbit/s)"},
        {"mode",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"continuous", "rate"},
         false,
         "continuous",
         "continuous: a frame every half pause time at the link speed, so the priorities stay "
         "paused; rate: rate_fps frames per second"},
        {"rate_fps",
         ParamType::kNumber,
         "frames/s",
         0,
         true,
         1000000,
         {},
         false,
         nullptr,
         "frames per second; mode rate only"},
        {"link_mbps",
         ParamType::kInteger,
         "Mbit/s",
         1,
         false,
         10000000,
         {},
         false,
         nullptr,
         "the link speed continuous mode paces by, when the interface reports none"},
        {"on_ms",
         ParamType::kInteger,
         "ms",
         1,
         false,
         600000,
         {},
         false,
         nullptr,
         "intermittent storm: send for on_ms, then stay silent for off_ms (with off_ms)"},
        {"off_ms",
         ParamType::kInteger,
         "ms",
         1,
         false,
         600000,
         {},
         false,
         nullptr,
         "the silent part of an intermittent storm (with on_ms)"},
        {"xon_on_stop",
         ParamType::kBoolean,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {},
         false,
         true,
         "on revert, send one frame with pause time 0 so that the pause ends at once"},
    };
    return s;
  }();
  return spec;
}

core::Status checkPfcStormParams(const json& params) {
  auto unacceptable = [](const std::string& message) {
    return core::Status(core::StatusCode::kUnprocessable, message);
  };
  const json full = withDefaults(pfcStormSpec(), params);
  const std::string mode = full.value("mode", "continuous");
  if (mode == "rate" && !full.contains("rate_fps")) {
    return unacceptable("rate_fps: required with mode \"rate\"");
  }
  if (mode != "rate" && full.contains("rate_fps")) {
    return unacceptable(
        "rate_fps: only with mode \"rate\" (continuous mode paces by the link speed)");
  }
  if (mode == "continuous" && full.value("quanta", 65535) == 0) {
    return unacceptable("quanta: must be at least 1 in continuous mode (0 pauses nothing)");
  }
  if (full.contains("on_ms") != full.contains("off_ms")) {
    return unacceptable(std::string(full.contains("on_ms") ? "off_ms" : "on_ms") +
                        ": on_ms and off_ms come together");
  }
  return core::Status::ok();
}

}  // namespace fabric_chaos::injectors
