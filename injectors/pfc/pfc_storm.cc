#include "injectors/pfc/pfc_storm.h"

#include <cmath>

#include "injectors/model/pfc_storm_spec.h"
#include "injectors/sys/emitters.h"
#include "injectors/sys/links.h"

namespace fabric_chaos::injectors {
namespace {

core::Result<InterfaceTarget> checkTarget(const Fault& fault) {
  auto target = requireInterface(PfcStorm::kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (target->ifname.empty()) {
    return core::Status(core::StatusCode::kInvalidArgument, "target.ifname: required");
  }
  return target;
}

core::Status unavailable() {
  return core::Status(core::StatusCode::kNotSupported,
                      "pfc_storm needs the emitters and this program's path");
}

}  // namespace

const KindSpec& PfcStorm::spec() const { return pfcStormSpec(); }

KindInfo PfcStorm::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = links_ != nullptr && emitters_ != nullptr && !self_exe_.empty();
  info.backend = "af_packet";
  if (!info.available) info.reason = "no emitter support in this agent";
  return info;
}

core::Status PfcStorm::validate(const json& params) const {
  FC_RETURN_IF_ERROR(checkParams(spec(), params));
  return checkPfcStormParams(params);
}

std::string PfcStorm::emitterKey(const InterfaceTarget& target) {
  return std::string(kKind) + " " + (target.netns.empty() ? "" : target.netns + "/") +
         target.ifname;
}

std::vector<std::string> PfcStorm::emitterArgv(const std::string& self_exe,
                                               const InterfaceTarget& target, const json& params) {
  const json p = withDefaults(pfcStormSpec(), params);
  std::string priorities;
  for (const json& priority : p["priorities"]) {
    priorities += (priorities.empty() ? "" : ",") + std::to_string(priority.get<int>());
  }
  std::vector<std::string> argv{
      self_exe,       "pfc-emit", "--ifname", target.ifname,
      "--priorities", priorities, "--quanta", std::to_string(p["quanta"].get<int>())};
  if (p.value("mode", "continuous") == "rate") {
    const double period_us = 1e6 / p["rate_fps"].get<double>();
    argv.insert(argv.end(),
                {"--interval-us", std::to_string(std::max<int64_t>(1, std::llround(period_us)))});
  } else {
    argv.push_back("--continuous");
    // Late frames would let the pause lapse. The emitter stays an ordinary process when its
    // period is so short that real-time scheduling could take a core (pfcEmitRealtime).
    argv.push_back("--realtime");
    if (p.contains("link_mbps")) {
      argv.insert(argv.end(), {"--link-mbps", std::to_string(p["link_mbps"].get<int64_t>())});
    }
  }
  if (p.contains("on_ms")) {
    argv.insert(argv.end(), {"--on-ms", std::to_string(p["on_ms"].get<int64_t>()), "--off-ms",
                             std::to_string(p["off_ms"].get<int64_t>())});
  }
  if (p.value("xon_on_stop", true)) argv.push_back("--xon-on-stop");
  return argv;
}

core::Result<json> PfcStorm::capture(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) return unavailable();
  auto link = links_->getLink(target->netns, target->ifname);
  if (!link.isOk()) return link.status().withContext("pfc_storm capture");
  return json::object();
}

core::Status PfcStorm::apply(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) return unavailable();
  FC_RETURN_IF_ERROR(validate(fault.params));
  sys::EmitterSpec emitter;
  emitter.key = emitterKey(*target);
  emitter.argv = emitterArgv(self_exe_, *target, fault.params);
  emitter.netns = target->netns;
  return emitters_->start(emitter).withContext("pfc_storm on " + describe(fault));
}

core::Status PfcStorm::revert(const Fault& fault, const json& /*prior*/) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return unavailable();
  auto stopped = emitters_->stop(emitterKey(*target), kStopGraceMs);
  return stopped.status().withContext("pfc_storm stop on " + describe(fault));
}

core::Result<json> PfcStorm::observe(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return unavailable();
  auto state = emitters_->state(emitterKey(*target));
  if (!state.isOk()) return state.status().withContext("pfc_storm observe");
  return sys::toJson(*state);
}

}  // namespace fabric_chaos::injectors
