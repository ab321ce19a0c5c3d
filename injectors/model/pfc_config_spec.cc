#include "injectors/model/pfc_config_spec.h"

#include <set>

namespace fabric_chaos::injectors {

const KindSpec& pfcConfigSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "pfc_config";
    s.summary =
        "Turns PFC off (or on) for priorities of one interface, as a host or port configured "
        "without the lossless class would be: its pause frames are no longer honoured.";
    s.resource = "pfc_enable";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"disable",
         ParamType::kIntegerList,
         "",
         0,
         false,
         7,
         {},
         false,
         nullptr,
         "priorities to take PFC off (the RoCE class is usually 3)"},
        {"enable",
         ParamType::kIntegerList,
         "",
         0,
         false,
         7,
         {},
         false,
         nullptr,
         "priorities to turn PFC on (the wrong class, with disable naming the right one)"},
    };
    return s;
  }();
  return spec;
}

core::Status checkPfcConfigParams(const json& params) {
  const bool enable = params.contains("enable");
  const bool disable = params.contains("disable");
  if (!enable && !disable) {
    return unacceptableParam("disable", "name the priorities to change (disable, enable or both)");
  }
  if (enable && disable) {
    std::set<int> on;
    for (const json& p : params["enable"]) on.insert(p.get<int>());
    for (const json& p : params["disable"]) {
      if (on.count(p.get<int>()) != 0) {
        return unacceptableParam(
            "enable", "priority " + std::to_string(p.get<int>()) + " is also in disable");
      }
    }
  }
  return core::Status::ok();
}

uint8_t pfcConfigMask(uint8_t current, const json& params) {
  unsigned mask = current;
  for (const json& p : params.value("enable", json::array())) mask |= 1u << p.get<int>();
  for (const json& p : params.value("disable", json::array())) mask &= ~(1u << p.get<int>());
  return static_cast<uint8_t>(mask);
}

}  // namespace fabric_chaos::injectors
