#pragma once
// What the traffic kinds (incast, hot_spot) share: checking a traffic-set target, the sink's
// address, which generators an agent runs for a set (all of them, or its part's), their command
// lines (`<self_exe> traffic sink|source`, app/traffic_cmd.cc), starting them as emitters
// (injectors/sys/emitters.h) with nothing left behind when one fails, stopping them, and
// observing them. Each kind names its generators by its own keys, so that an incast and a hot
// spot never stop each other's.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/model/target.h"
#include "injectors/model/traffic_observation.h"

namespace fabric_chaos::sys {
class Emitters;
class LinkControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

// "netns/ifname", or "ifname" in the agent's own namespace.
std::string endpointName(const InterfaceTarget& endpoint);

// One sink, at least one source (none in a sink part), every endpoint named, no source that is
// the sink or repeats, a sources part with its sink's address, no paths on a part;
// kInvalidArgument naming the field otherwise.
core::Result<TrafficSetTarget> checkTrafficSet(const std::string& kind, const Target& target);

// The first IPv4 address of the endpoint; kFailedPrecondition when it has none.
core::Result<std::string> ipv4AddressOf(sys::LinkControl& links, const InterfaceTarget& endpoint,
                                        const std::string& role);
// Where the sources send: a sources part's sink_address, else the sink's first IPv4 address.
core::Result<std::string> sinkAddressOf(sys::LinkControl& links, const TrafficSetTarget& set);

// The generators' command lines, from the kind's params (defaults applied): the sink takes port
// and transport; a source also message_bytes and dscp, and rate_mbps / congestion_control when
// present; source_ports empty: ephemeral ports.
std::vector<std::string> trafficSinkArgv(const std::string& self_exe, const std::string& address,
                                         const nlohmann::json& params);
std::vector<std::string> trafficSourceArgv(const std::string& self_exe, const std::string& address,
                                           int flows, const nlohmann::json& params,
                                           const std::vector<int>& source_ports = {});

// One generator to run: its emitter key, command line and namespace.
struct TrafficGenerator {
  std::string key;
  std::vector<std::string> argv;
  std::string netns;
  std::string endpoint;  // for messages and reports
};

// The generators one agent runs for a set: the sink unless it is a sources part, and the sources
// (in the order of set.sources) unless it is a sink part. Command lines are left to the kind.
// Keys: "<kind> sink <endpoint>", "<kind> source <endpoint> to <sink endpoint or address>".
struct TrafficGeneratorSet {
  std::optional<TrafficGenerator> sink;
  std::vector<TrafficGenerator> sources;
};
TrafficGeneratorSet trafficGenerators(const std::string& kind, const TrafficSetTarget& set);

// How long a revert lets a generator print its final report before SIGKILL.
inline constexpr int kTrafficStopGraceMs = 1000;
// How long apply waits for a generator's first report. It prints one as soon as it has parsed its
// command line, so this is the time to exec it: milliseconds on a host, but over 3 s in a VM-lab
// guest (qemu TCG, the binary read over 9p, three guests on two cores).
inline constexpr int kTrafficReadyTimeoutMs = 15000;

class TrafficGenerators {
 public:
  explicit TrafficGenerators(sys::Emitters* emitters) : emitters_(emitters) {}

  // Starts the sink, then each source; when one fails, stops every one it started, so that a
  // failed apply leaves no traffic on the fabric. Generators already running under their keys
  // are left as they are.
  core::Status start(const TrafficGeneratorSet& set, const std::string& kind);
  // Stops the sources, then the sink, including generators a crashed incarnation left; the
  // first failure, after trying them all.
  core::Status stop(const TrafficGeneratorSet& set, const std::string& kind);
  // {"running": all running, "sink"?: {...}, "sources": [{"endpoint", "running", "pid", "report",
  // "exit_code"?, "log"?}], "source_bytes": [...], "source_goodput_mbps": [...] (each source's
  // bytes over its own clock), "jain_fairness": over the bytes}; the first generator that is not
  // running lends its exit_code and log to the top level, which the engine's health check quotes.
  // A sources part has no "sink"; a sink part's lists are empty.
  core::Result<nlohmann::json> observe(const TrafficGeneratorSet& set, const std::string& kind);

 private:
  sys::Emitters* emitters_;
};

}  // namespace fabric_chaos::injectors
