#include "injectors/model/link_flap_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& linkFlapSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "link_flap";
    s.summary =
        "Takes an interface administratively down, then up again, count times: a flapping link "
        "or a switch port that bounces.";
    // Every flap means "link down": overlapping flaps on one port merge, and the last one out
    // restores the state from before the first.
    s.resource = "link_state";
    s.composition = Composition::kStacks;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kRepeated, "down_ms", "up_ms", "count"};
    s.params = {
        {"down_ms",
         ParamType::kInteger,
         "ms",
         1,
         false,
         kMaxFlapPhaseMs,
         {},
         true,
         nullptr,
         "how long each flap holds the link down"},
        {"up_ms",
         ParamType::kInteger,
         "ms",
         1,
         false,
         kMaxFlapPhaseMs,
         {},
         false,
         nullptr,
         "link-up time between two flaps; defaults to down_ms"},
        {"count",
         ParamType::kInteger,
         "",
         1,
         false,
         kMaxFlapCount,
         {},
         false,
         1,
         "number of flaps; the step lasts count*down_ms + (count-1)*up_ms"},
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
