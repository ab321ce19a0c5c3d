#include "injectors/traffic/incast.h"

#include "injectors/model/incast_spec.h"
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

TrafficGenerator sinkGenerator(const InterfaceTarget& sink) {
  return {Incast::sinkKey(sink), {}, sink.netns, endpointName(sink)};
}

std::vector<TrafficGenerator> sourceGenerators(const TrafficSetTarget& set) {
  std::vector<TrafficGenerator> out;
  for (const InterfaceTarget& source : set.sources) {
    out.push_back(
        {Incast::sourceKey(source, set.sinks[0]), {}, source.netns, endpointName(source)});
  }
  return out;
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

Status Incast::validate(const json& params) const { return checkParams(spec(), params); }

std::string Incast::sinkKey(const InterfaceTarget& sink) {
  return std::string(kKind) + " sink " + endpointName(sink);
}

std::string Incast::sourceKey(const InterfaceTarget& source, const InterfaceTarget& sink) {
  return std::string(kKind) + " source " + endpointName(source) + " to " + endpointName(sink);
}

std::vector<std::string> Incast::sinkArgv(const std::string& self_exe,
                                          const std::string& sink_address, const json& params) {
  const json p = withDefaults(incastSpec(), params);
  return trafficSinkArgv(self_exe, sink_address, p["port"].get<int>());
}

std::vector<std::string> Incast::sourceArgv(const std::string& self_exe,
                                            const std::string& sink_address, const json& params) {
  const json p = withDefaults(incastSpec(), params);
  return trafficSourceArgv(self_exe, sink_address, p["port"].get<int>(),
                           p["flows_per_source"].get<int>(), p);
}

core::Result<json> Incast::capture(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) return noSupport();
  for (const InterfaceTarget& source : target->sources) {
    auto link = links_->getLink(source.netns, source.ifname);
    if (!link.isOk()) return link.status().withContext("incast capture");
  }
  auto address = ipv4AddressOf(*links_, target->sinks[0], "sink");
  if (!address.isOk()) return address.status().withContext("incast capture");
  return json{{"sink_address", *address}};
}

Status Incast::apply(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) return noSupport();
  FC_RETURN_IF_ERROR(validate(fault.params));
  const InterfaceTarget& sink = target->sinks[0];
  auto address = ipv4AddressOf(*links_, sink, "sink");
  if (!address.isOk()) return address.status().withContext("incast on " + describe(fault));

  TrafficGenerator sink_generator = sinkGenerator(sink);
  sink_generator.argv = sinkArgv(self_exe_, *address, fault.params);
  std::vector<TrafficGenerator> sources = sourceGenerators(*target);
  for (TrafficGenerator& source : sources) {
    source.argv = sourceArgv(self_exe_, *address, fault.params);
  }
  return TrafficGenerators(emitters_).start(sink_generator, sources, kKind);
}

Status Incast::revert(const Fault& fault, const json& /*prior*/) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return noSupport();
  std::vector<std::string> source_keys;
  for (const TrafficGenerator& source : sourceGenerators(*target)) {
    source_keys.push_back(source.key);
  }
  return TrafficGenerators(emitters_).stop(sinkKey(target->sinks[0]), source_keys, kKind);
}

core::Result<json> Incast::observe(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return noSupport();
  return TrafficGenerators(emitters_).observe(sinkGenerator(target->sinks[0]),
                                              sourceGenerators(*target), kKind);
}

}  // namespace fabric_chaos::injectors
