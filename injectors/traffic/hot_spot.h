#pragma once
// hot_spot: a long-running fault on a traffic set: elephant flows from the sources to one sink,
// pinned through a chosen switch port. With paths (a leaf-spine uplink chosen by the step's
// selector, scenarios/step_targets.h), apply first picks the path (the only one, or the busiest
// or idlest by the ports' transmit counters over sample_ms), then asks each source's leaf, through
// its own FIB (sys::Forwarding), which source ports it hashes onto that path's uplink, and starts
// the generators (injectors/traffic/traffic_generators.h) with exactly those ports: an ECMP
// collision made on purpose. Without paths the flows take whatever route the fabric gives them
// (a hot spot at the victim's own port), over TCP or RC QPs (params.transport; pinning to a path
// needs TCP, whose source ports we choose). A set cut into parts across agents has no paths; each
// agent runs its part. revert stops the generators; observe adds the path chosen and the ports to
// the generators' health and goodput.

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "injectors/injector.h"
#include "injectors/traffic/traffic_generators.h"

namespace fabric_chaos::sys {
class Emitters;
class Forwarding;
class LinkControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class HotSpot : public Injector {
 public:
  static constexpr const char* kKind = "hot_spot";
  using SleepMs = std::function<void(int64_t)>;

  // sleep_ms: how apply waits between the two counter samples (tests pass their own).
  HotSpot(sys::LinkControl* links, sys::Emitters* emitters, sys::Forwarding* forwarding,
          std::string self_exe, SleepMs sleep_ms = {});

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // Checks every endpoint, every path's port and the sink's IPv4 address; the prior is
  // {"sink_address": ...} (nothing of the system changes).
  core::Result<json> capture(const Fault& fault) override;
  // Chooses the path and the source ports, then starts the sink and the sources; a failure
  // leaves nothing running. kFailedPrecondition when no port in the search range hashes onto
  // the chosen uplink (it is down, or not an equal-cost path from that source).
  core::Status apply(const Fault& fault) override;
  core::Status revert(const Fault& fault, const json& prior) override;
  // The generators' observation plus "path": {"port", "chosen_by": "only"|"busiest"|"idlest",
  // "candidates": [{"port", "tx_bytes"}] (sampled), "sources": [{"endpoint", "switch",
  // "egress", "source_ports"}]} when this agent applied it.
  core::Result<json> observe(const Fault& fault) override;

 private:
  // Where apply keeps the path it chose, for observe: the sink's generator key is per set.
  static std::string pathKey(const TrafficSetTarget& set);
  core::Result<size_t> choosePath(const TrafficSetTarget& set, const json& params, json& record);
  core::Result<std::vector<int>> steeredPorts(const EcmpSteer& steer, const std::string& source,
                                              const std::string& sink, const json& params);

  sys::LinkControl* links_;
  sys::Emitters* emitters_;
  sys::Forwarding* forwarding_;
  std::string self_exe_;
  SleepMs sleep_ms_;
  std::mutex mu_;
  std::map<std::string, json> paths_;  // by sink key: what apply chose, for observe
};

}  // namespace fabric_chaos::injectors
