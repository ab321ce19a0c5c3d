#include "injectors/traffic/incast.h"

#include "injectors/model/incast_spec.h"
#include "injectors/model/traffic_params.h"
#include "injectors/sys/emitters.h"
#include "injectors/sys/links.h"
#include "injectors/traffic/traffic_generators.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

Status noSupport() {
  return Status(StatusCode::kNotSupported, "incast needs the emitters and this program's path");
}

}  // namespace

const KindSpec& Incast::spec() const { return incastSpec(); }

KindInfo Incast::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = links_ != nullptr && emitters_ != nullptr && !self_exe_.empty();
  info.backend = "tcp";
  if (!info.available) info.reason = "no emitter support in this agent";
  return info;
}

Status Incast::validate(const json& params) const { return checkTrafficParams(spec(), params); }

std::vector<std::string> Incast::sinkArgv(const std::string& self_exe,
                                          const std::string& sink_address, const json& params) {
  return trafficSinkArgv(self_exe, sink_address, withDefaults(incastSpec(), params));
}

std::vector<std::string> Incast::sourceArgv(const std::string& self_exe,
                                            const std::string& sink_address, const json& params) {
  const json p = withDefaults(incastSpec(), params);
  return trafficSourceArgv(self_exe, sink_address, p["flows_per_source"].get<int>(), p);
}

core::Result<json> Incast::capture(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) return noSupport();
  for (const InterfaceTarget& endpoint : localEndpoints(*target)) {
    auto link = links_->getLink(endpoint.netns, endpoint.ifname);
    if (!link.isOk()) return link.status().withContext("incast capture");
  }
  auto address = sinkAddressOf(*links_, *target);
  if (!address.isOk()) return address.status().withContext("incast capture");
  return json{{"sink_address", *address}};
}

Status Incast::apply(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) return noSupport();
  FC_RETURN_IF_ERROR(validate(fault.params));
  auto address = sinkAddressOf(*links_, *target);
  if (!address.isOk()) return address.status().withContext("incast on " + describe(fault));
  TrafficGeneratorSet generators = trafficGenerators(kKind, *target);
  if (generators.sink) generators.sink->argv = sinkArgv(self_exe_, *address, fault.params);
  for (TrafficGenerator& source : generators.sources) {
    source.argv = sourceArgv(self_exe_, *address, fault.params);
  }
  return TrafficGenerators(emitters_).start(generators, kKind);
}

Status Incast::revert(const Fault& fault, const json& /*prior*/) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return noSupport();
  return TrafficGenerators(emitters_).stop(trafficGenerators(kKind, *target), kKind);
}

core::Result<json> Incast::observe(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return noSupport();
  return TrafficGenerators(emitters_).observe(trafficGenerators(kKind, *target), kKind);
}

}  // namespace fabric_chaos::injectors
