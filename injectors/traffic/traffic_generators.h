#pragma once
// What the traffic kinds (incast, hot_spot) share: checking a traffic-set target, the sink's
// address, the generators' command lines (`<self_exe> traffic sink|source`, app/traffic_cmd.cc),
// starting a sink and its sources as emitters (injectors/sys/emitters.h) with nothing left behind
// when one fails, stopping them, and observing them. Each kind names its generators by its own
// keys, so that an incast and a hot spot never stop each other's.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/model/target.h"

namespace fabric_chaos::sys {
class Emitters;
class LinkControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

// "netns/ifname", or "ifname" in the agent's own namespace.
std::string endpointName(const InterfaceTarget& endpoint);

// One sink, at least one source, every endpoint named, no source that is the sink or repeats;
// kInvalidArgument naming the field otherwise.
core::Result<TrafficSetTarget> checkTrafficSet(const std::string& kind, const Target& target);

// The first IPv4 address of the endpoint; kFailedPrecondition when it has none.
core::Result<std::string> ipv4AddressOf(sys::LinkControl& links, const InterfaceTarget& endpoint,
                                        const std::string& role);

// The generators' command lines. Source flags come from the kind's params (message_bytes, dscp,
// and rate_mbps / congestion_control when present); source_ports empty: ephemeral ports.
std::vector<std::string> trafficSinkArgv(const std::string& self_exe, const std::string& address,
                                         int port);
std::vector<std::string> trafficSourceArgv(const std::string& self_exe, const std::string& address,
                                           int port, int flows, const nlohmann::json& params,
                                           const std::vector<int>& source_ports = {});

// One generator to run: its emitter key, command line and namespace.
struct TrafficGenerator {
  std::string key;
  std::vector<std::string> argv;
  std::string netns;
  std::string endpoint;  // for messages and reports
};

// How long a revert lets a generator print its final report before SIGKILL.
inline constexpr int kTrafficStopGraceMs = 1000;

class TrafficGenerators {
 public:
  explicit TrafficGenerators(sys::Emitters* emitters) : emitters_(emitters) {}

  // Starts the sink, then each source; when one fails, stops every one it started, so that a
  // failed apply leaves no traffic on the fabric. Generators already running under their keys
  // are left as they are.
  core::Status start(const TrafficGenerator& sink, const std::vector<TrafficGenerator>& sources,
                     const std::string& kind);
  // Stops the sources, then the sink, including generators a crashed incarnation left; the
  // first failure, after trying them all.
  core::Status stop(const std::string& sink_key, const std::vector<std::string>& source_keys,
                    const std::string& kind);
  // {"running": all running, "sink": {...}, "sources": [{"endpoint", "running", "pid", "report",
  // "exit_code"?, "log"?}], "source_bytes": [...], "source_goodput_mbps": [...] (each source's
  // bytes over its own clock), "jain_fairness": over the bytes}; the first generator that is not
  // running lends its exit_code and log to the top level, which the engine's health check quotes.
  core::Result<nlohmann::json> observe(const TrafficGenerator& sink,
                                       const std::vector<TrafficGenerator>& sources,
                                       const std::string& kind);

 private:
  sys::Emitters* emitters_;
};

// Jain's fairness index of shares (sum^2 / (n * sum of squares)): 1 when all are equal, 1/n
// when one takes everything; 1 for no shares or all zero (nothing to be unfair about).
double jainFairnessIndex(const std::vector<double>& shares);

}  // namespace fabric_chaos::injectors
