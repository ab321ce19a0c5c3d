#include "injectors/traffic/traffic_generators.h"

#include "injectors/sys/emitters.h"
#include "injectors/sys/links.h"

namespace fabric_chaos::injectors {
using core::Status;
using core::StatusCode;
using nlohmann::json;

std::string endpointName(const InterfaceTarget& endpoint) {
  return (endpoint.netns.empty() ? "" : endpoint.netns + "/") + endpoint.ifname;
}

core::Result<TrafficSetTarget> checkTrafficSet(const std::string& kind, const Target& target) {
  const auto* set = std::get_if<TrafficSetTarget>(&target);
  if (set == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  kind + " acts on traffic_set targets, not " + describe(target));
  }
  if (set->sinks.size() != 1) {
    return Status(StatusCode::kUnprocessable, "target.sinks: " + kind + " has exactly one sink, " +
                                                  std::to_string(set->sinks.size()) + " given");
  }
  if (set->sinks[0].ifname.empty()) {
    return Status(StatusCode::kInvalidArgument, "target.sinks[0].ifname: required");
  }
  if (set->part == TrafficPart::kSink && !set->sources.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "target.sources: a sink part runs the sink alone; its sources are other parts'");
  }
  if (set->part != TrafficPart::kSink && set->sources.empty()) {
    return Status(StatusCode::kInvalidArgument, "target.sources: at least one source is needed");
  }
  if (set->part == TrafficPart::kSources && set->sink_address.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "target.sink_address: a sources part needs its sink's address");
  }
  if (set->part != TrafficPart::kWhole && !set->paths.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "target.paths: traffic pinned to a path is steered by one agent; a set cut into "
                  "parts has none");
  }
  for (size_t i = 0; i < set->sources.size(); ++i) {
    const InterfaceTarget& source = set->sources[i];
    const std::string path = "target.sources[" + std::to_string(i) + "]";
    if (source.ifname.empty()) {
      return Status(StatusCode::kInvalidArgument, path + ".ifname: required");
    }
    // A sources part's sink is another host's: the same interface name is another interface.
    if (set->part != TrafficPart::kSources && source == set->sinks[0]) {
      return Status(StatusCode::kUnprocessable,
                    path + ": " + endpointName(source) + " is the sink; it cannot send to itself");
    }
    for (size_t j = 0; j < i; ++j) {
      if (set->sources[j] == source) {
        return Status(StatusCode::kUnprocessable,
                      path + ": " + endpointName(source) + " is listed twice");
      }
    }
  }
  for (size_t i = 0; i < set->paths.size(); ++i) {
    if (set->paths[i].steers.size() != set->sources.size()) {
      return Status(StatusCode::kInvalidArgument,
                    "target.paths[" + std::to_string(i) + "].steers: one per source (" +
                        std::to_string(set->sources.size()) + "), " +
                        std::to_string(set->paths[i].steers.size()) + " given");
    }
  }
  return *set;
}

core::Result<std::string> ipv4AddressOf(sys::LinkControl& links, const InterfaceTarget& endpoint,
                                        const std::string& role) {
  auto addresses = links.ipv4Addresses(endpoint.netns, endpoint.ifname);
  if (!addresses.isOk()) return addresses.status();
  if (addresses->empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "the " + role + " " + endpointName(endpoint) + " has no IPv4 address");
  }
  return addresses->front();
}

core::Result<std::string> sinkAddressOf(sys::LinkControl& links, const TrafficSetTarget& set) {
  if (set.part == TrafficPart::kSources) return set.sink_address;
  return ipv4AddressOf(links, set.sinks[0], "sink");
}

namespace {

// "[fd00::2]:7700" or "10.0.0.2:7700".
std::string hostPort(const std::string& address, int port) {
  const bool v6 = address.find(':') != std::string::npos;
  return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// "--transport verbs" when the params ask for it; TCP is the generator's default.
void addTransport(std::vector<std::string>& argv, const json& params) {
  if (params.value("transport", "tcp") == "verbs")
    argv.insert(argv.end(), {"--transport", "verbs"});
}

}  // namespace

std::vector<std::string> trafficSinkArgv(const std::string& self_exe, const std::string& address,
                                         const json& params) {
  std::vector<std::string> argv{self_exe, "traffic", "sink", "--listen",
                                hostPort(address, params.at("port").get<int>())};
  addTransport(argv, params);
  return argv;
}

std::vector<std::string> trafficSourceArgv(const std::string& self_exe, const std::string& address,
                                           int flows, const json& params,
                                           const std::vector<int>& source_ports) {
  std::vector<std::string> argv{self_exe,
                                "traffic",
                                "source",
                                "--connect",
                                hostPort(address, params.at("port").get<int>()),
                                "--flows",
                                std::to_string(flows),
                                "--message-bytes",
                                std::to_string(params.at("message_bytes").get<int64_t>()),
                                "--dscp",
                                std::to_string(params.at("dscp").get<int>())};
  addTransport(argv, params);
  if (params.contains("rate_mbps")) {
    argv.insert(argv.end(), {"--rate-mbps", std::to_string(params["rate_mbps"].get<int64_t>())});
  }
  if (params.contains("congestion_control")) {
    argv.insert(argv.end(),
                {"--congestion-control", params["congestion_control"].get<std::string>()});
  }
  if (!source_ports.empty()) {
    std::string ports;
    for (int port_number : source_ports) {
      ports += (ports.empty() ? "" : ",") + std::to_string(port_number);
    }
    argv.insert(argv.end(), {"--source-ports", ports});
  }
  return argv;
}

TrafficGeneratorSet trafficGenerators(const std::string& kind, const TrafficSetTarget& set) {
  TrafficGeneratorSet out;
  const InterfaceTarget& sink = set.sinks[0];
  if (set.part != TrafficPart::kSources) {
    out.sink =
        TrafficGenerator{kind + " sink " + endpointName(sink), {}, sink.netns, endpointName(sink)};
  }
  if (set.part == TrafficPart::kSink) return out;
  const std::string to = set.part == TrafficPart::kSources ? set.sink_address : endpointName(sink);
  for (const InterfaceTarget& source : set.sources) {
    out.sources.push_back({kind + " source " + endpointName(source) + " to " + to,
                           {},
                           source.netns,
                           endpointName(source)});
  }
  return out;
}

Status TrafficGenerators::start(const TrafficGeneratorSet& set, const std::string& kind) {
  auto spec = [](const TrafficGenerator& generator) {
    sys::EmitterSpec out;
    out.key = generator.key;
    out.argv = generator.argv;
    out.netns = generator.netns;
    out.ready_timeout_ms = kTrafficReadyTimeoutMs;
    return out;
  };
  std::vector<std::string> started;
  auto undo = [&] {
    for (auto it = started.rbegin(); it != started.rend(); ++it) {
      (void)emitters_->stop(*it, kTrafficStopGraceMs);
    }
  };
  if (set.sink) {
    FC_RETURN_IF_ERROR(
        emitters_->start(spec(*set.sink)).withContext(kind + " sink on " + set.sink->endpoint));
    started.push_back(set.sink->key);
  }
  for (const TrafficGenerator& source : set.sources) {
    Status status = emitters_->start(spec(source));
    if (!status.isOk()) {
      undo();
      return status.withContext(kind + " source on " + source.endpoint);
    }
    started.push_back(source.key);
  }
  return Status::ok();
}

Status TrafficGenerators::stop(const TrafficGeneratorSet& set, const std::string& kind) {
  Status first = Status::ok();
  auto stopOne = [&](const std::string& key) {
    auto stopped = emitters_->stop(key, kTrafficStopGraceMs);
    if (!stopped.isOk() && first.isOk()) {
      first = stopped.status().withContext(kind + " stop of " + key);
    }
  };
  for (const TrafficGenerator& source : set.sources) stopOne(source.key);
  if (set.sink) stopOne(set.sink->key);
  return first;
}

core::Result<json> TrafficGenerators::observe(const TrafficGeneratorSet& set,
                                              const std::string& kind) {
  bool all_running = true;
  json out = json::object();
  auto note = [&](const sys::EmitterState& state) {
    if (state.running || !all_running) return;
    all_running = false;
    if (state.exit_code) out["exit_code"] = *state.exit_code;
    if (!state.log_tail.empty()) out["log"] = state.log_tail;
  };
  if (set.sink) {
    auto sink_state = emitters_->state(set.sink->key);
    if (!sink_state.isOk()) return sink_state.status().withContext(kind + " observe");
    note(*sink_state);
    out["sink"] = sys::toJson(*sink_state);
    out["sink"]["endpoint"] = set.sink->endpoint;
  }
  json source_states = json::array();
  std::vector<double> bytes;
  std::vector<double> goodput;
  for (const TrafficGenerator& source : set.sources) {
    auto state = emitters_->state(source.key);
    if (!state.isOk()) return state.status().withContext(kind + " observe");
    note(*state);
    json entry = sys::toJson(*state);
    entry["endpoint"] = source.endpoint;
    source_states.push_back(std::move(entry));
    const json& report = state->last_report;
    bytes.push_back(report.is_object() ? report.value("bytes", 0.0) : 0.0);
    // Mean goodput since the source started: bytes over its own clock.
    const double t_ms = report.is_object() ? report.value("t_ms", 0.0) : 0.0;
    goodput.push_back(t_ms > 0 ? bytes.back() * 8 / (t_ms * 1000) : 0.0);
  }
  out["running"] = all_running;
  out["sources"] = std::move(source_states);
  out["source_bytes"] = bytes;
  out["source_goodput_mbps"] = goodput;
  out["jain_fairness"] = jainFairnessIndex(bytes);
  return out;
}

}  // namespace fabric_chaos::injectors
