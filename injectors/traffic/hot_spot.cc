#include "injectors/traffic/hot_spot.h"

#include <chrono>
#include <thread>

#include "injectors/model/hot_spot_spec.h"
#include "injectors/model/traffic_params.h"
#include "injectors/sys/emitters.h"
#include "injectors/sys/forwarding.h"
#include "injectors/sys/links.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

// Route lookups per round trip batch: a miss costs one batch, not one call per port.
constexpr int kPortBatch = 256;

Status noSupport() {
  return Status(StatusCode::kNotSupported,
                "hot_spot needs the emitters, the switches' forwarding lookup and this program's "
                "path");
}

}  // namespace

HotSpot::HotSpot(sys::LinkControl* links, sys::Emitters* emitters, sys::Forwarding* forwarding,
                 std::string self_exe, SleepMs sleep_ms)
    : links_(links),
      emitters_(emitters),
      forwarding_(forwarding),
      self_exe_(std::move(self_exe)),
      sleep_ms_(std::move(sleep_ms)) {
  if (!sleep_ms_) {
    sleep_ms_ = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  }
}

const KindSpec& HotSpot::spec() const { return hotSpotSpec(); }

KindInfo HotSpot::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available =
      links_ != nullptr && emitters_ != nullptr && forwarding_ != nullptr && !self_exe_.empty();
  info.backend = "tcp";
  if (!info.available) info.reason = "no emitter or forwarding support in this agent";
  return info;
}

Status HotSpot::validate(const json& params) const { return checkTrafficParams(spec(), params); }

core::Result<json> HotSpot::capture(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (!info().available) return noSupport();
  if (target->part != TrafficPart::kSink) {
    for (const InterfaceTarget& source : target->sources) {
      auto address = ipv4AddressOf(*links_, source, "source");
      if (!address.isOk()) return address.status().withContext("hot_spot capture");
    }
  }
  for (const TrafficPath& path : target->paths) {
    auto link = links_->getLink(path.port.netns, path.port.ifname);
    if (!link.isOk()) return link.status().withContext("hot_spot capture");
  }
  auto address = sinkAddressOf(*links_, *target);
  if (!address.isOk()) return address.status().withContext("hot_spot capture");
  return json{{"sink_address", *address}};
}

core::Result<size_t> HotSpot::choosePath(const TrafficSetTarget& set, const json& params,
                                         json& record) {
  json candidates = json::array();
  if (set.paths.size() == 1) {
    record["chosen_by"] = "only";
    record["candidates"] = candidates;
    return size_t{0};
  }
  auto sample = [&]() -> core::Result<std::vector<uint64_t>> {
    std::vector<uint64_t> bytes;
    for (const TrafficPath& path : set.paths) {
      auto link = links_->getLink(path.port.netns, path.port.ifname);
      if (!link.isOk()) return link.status().withContext("hot_spot sampling the candidate ports");
      bytes.push_back(link->tx_bytes);
    }
    return bytes;
  };
  auto before = sample();
  if (!before.isOk()) return before.status();
  sleep_ms_(params["sample_ms"].get<int64_t>());
  auto after = sample();
  if (!after.isOk()) return after.status();
  const bool busiest = params["path"] == "busiest";
  size_t chosen = 0;
  std::vector<uint64_t> sent(set.paths.size());
  for (size_t i = 0; i < set.paths.size(); ++i) {
    sent[i] = (*after)[i] >= (*before)[i] ? (*after)[i] - (*before)[i] : 0;
    candidates.push_back({{"port", endpointName(set.paths[i].port)}, {"tx_bytes", sent[i]}});
    if ((busiest && sent[i] > sent[chosen]) || (!busiest && sent[i] < sent[chosen])) chosen = i;
  }
  record["chosen_by"] = params["path"];
  record["candidates"] = std::move(candidates);
  return chosen;
}

core::Result<std::vector<int>> HotSpot::steeredPorts(const EcmpSteer& steer,
                                                     const std::string& source,
                                                     const std::string& sink, const json& params) {
  const int wanted = params["flows"].get<int>();
  const int first = params["first_source_port"].get<int>();
  sys::ArrivingTcpFlows flows{steer.ingress, source, sink, params["port"].get<int>()};
  std::vector<int> ports;
  for (int start = first; start < first + kHotSpotPortSearch; start += kPortBatch) {
    std::vector<int> batch;
    for (int port = start; port < start + kPortBatch && port < first + kHotSpotPortSearch; ++port) {
      batch.push_back(port);
    }
    auto egress = forwarding_->egressInterfaces(steer.netns, flows, batch);
    if (!egress.isOk()) {
      return egress.status().withContext("hot_spot asking " + steer.netns + " for the path");
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if ((*egress)[i] != steer.egress) continue;
      ports.push_back(batch[i]);
      if (static_cast<int>(ports.size()) == wanted) return ports;
    }
  }
  return Status(StatusCode::kFailedPrecondition,
                "only " + std::to_string(ports.size()) + " of source ports " +
                    std::to_string(first) + "-" + std::to_string(first + kHotSpotPortSearch - 1) +
                    " from " + source + " to " + sink + " leave " + steer.netns + " by " +
                    steer.egress + ", " + std::to_string(wanted) +
                    " needed: is that uplink down, or not one of the equal-cost paths?");
}

Status HotSpot::apply(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (!info().available) return noSupport();
  FC_RETURN_IF_ERROR(validate(fault.params));
  const json params = withDefaults(spec(), fault.params);
  if (!target->paths.empty() && params["transport"] == "verbs") {
    return Status(StatusCode::kFailedPrecondition,
                  "hot_spot pins flows to an uplink by their TCP source ports; a RoCE flow's UDP "
                  "source port is its NIC's choice");
  }
  auto sink_address = sinkAddressOf(*links_, *target);
  if (!sink_address.isOk()) return sink_address.status().withContext("hot_spot apply");

  TrafficGeneratorSet generators = trafficGenerators(kKind, *target);
  const int flows = params["flows"].get<int>();
  json record = json::object();
  if (target->paths.empty()) {
    for (TrafficGenerator& source : generators.sources) {
      source.argv = trafficSourceArgv(self_exe_, *sink_address, flows, params);
    }
  } else {
    auto chosen = choosePath(*target, params, record);
    if (!chosen.isOk()) return chosen.status();
    const TrafficPath& path = target->paths[*chosen];
    record["port"] = endpointName(path.port);
    json steered = json::array();
    for (size_t i = 0; i < generators.sources.size(); ++i) {
      auto source_address = ipv4AddressOf(*links_, target->sources[i], "source");
      if (!source_address.isOk()) return source_address.status().withContext("hot_spot apply");
      const EcmpSteer& steer = path.steers[i];
      auto ports = steeredPorts(steer, *source_address, *sink_address, params);
      if (!ports.isOk()) return ports.status();
      generators.sources[i].argv =
          trafficSourceArgv(self_exe_, *sink_address, flows, params, *ports);
      steered.push_back({{"endpoint", generators.sources[i].endpoint},
                         {"switch", steer.netns},
                         {"egress", steer.egress},
                         {"source_ports", *ports}});
    }
    record["sources"] = std::move(steered);
  }
  if (generators.sink) generators.sink->argv = trafficSinkArgv(self_exe_, *sink_address, params);
  FC_RETURN_IF_ERROR(TrafficGenerators(emitters_).start(generators, kKind));
  if (!target->paths.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_[pathKey(*target)] = std::move(record);
  }
  return Status::ok();
}

Status HotSpot::revert(const Fault& fault, const json& /*prior*/) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return noSupport();
  Status stopped = TrafficGenerators(emitters_).stop(trafficGenerators(kKind, *target), kKind);
  std::lock_guard<std::mutex> lock(mu_);
  paths_.erase(pathKey(*target));
  return stopped;
}

core::Result<json> HotSpot::observe(const Fault& fault) {
  auto target = checkTrafficSet(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) return noSupport();
  auto observed = TrafficGenerators(emitters_).observe(trafficGenerators(kKind, *target), kKind);
  if (!observed.isOk()) return observed;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = paths_.find(pathKey(*target)); it != paths_.end()) (*observed)["path"] = it->second;
  return observed;
}

std::string HotSpot::pathKey(const TrafficSetTarget& set) { return endpointName(set.sinks[0]); }

}  // namespace fabric_chaos::injectors
