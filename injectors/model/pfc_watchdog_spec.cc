#include "injectors/model/pfc_watchdog_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& pfcWatchdogSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "pfc_watchdog";
    s.summary =
        "Sets the PFC watchdog of a lab switch port for the step's window, with SONiC pfcwd's "
        "actions: drop or forward a priority paused for the detection time, or only alert.";
    s.resource = "pfc_watchdog";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"action",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"drop", "forward", "alert", "off"},
         false,
         "drop",
         "drop: discard the stormed queue and ignore its pauses; forward: ignore its pauses; "
         "alert: only count; off: no watchdog on the port for the step"},
        {"detection_ms",
         ParamType::kInteger,
         "ms",
         static_cast<double>(kPfcWatchdogMinDetectionMs),
         false,
         static_cast<double>(kPfcWatchdogMaxDetectionMs),
         {},
         false,
         200,
         "how long a priority stays paused before it is a storm (SONiC's default 200)"},
        {"restoration_ms",
         ParamType::kInteger,
         "ms",
         static_cast<double>(kPfcWatchdogMinRestorationMs),
         false,
         static_cast<double>(kPfcWatchdogMaxRestorationMs),
         {},
         false,
         200,
         "how long without a pause frame ends the storm (SONiC's default 200)"},
    };
    return s;
  }();
  return spec;
}

std::optional<PfcWatchdogConfig> pfcWatchdogFromParams(const json& params) {
  const json full = withDefaults(pfcWatchdogSpec(), params);
  const auto action = parsePfcWatchdogAction(full.value("action", "drop"));
  if (!action) return std::nullopt;  // "off"
  return PfcWatchdogConfig{*action, full.value("detection_ms", int64_t{200}),
                           full.value("restoration_ms", int64_t{200})};
}

}  // namespace fabric_chaos::injectors
