#include "injectors/traffic/incast.h"

#include "injectors/model/incast_spec.h"
#include "injectors/sys/emitters.h"
#include "injectors/sys/links.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

std::string endpointName(const InterfaceTarget& endpoint) {
  return (endpoint.netns.empty() ? "" : endpoint.netns + "/") + endpoint.ifname;
}

// One sink, at least one source, every endpoint named, no source that is the sink or repeats.
core::Result<TrafficSetTarget> checkTarget(const Fault& fault) {
  const auto* set = std::get_if<TrafficSetTarget>(&fault.target);
  if (set == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "incast acts on traffic_set targets, not " + describe(fault.target));
  }
  if (set->sinks.size() != 1) {
    return Status(StatusCode::kInvalidArgument, "target.sinks: an incast has exactly one sink, " +
                                                    std::to_string(set->sinks.size()) + " given");
  }
  if (set->sources.empty()) {
    return Status(StatusCode::kInvalidArgument, "target.sources: at least one source is needed");
  }
  for (size_t i = 0; i < set->sources.size(); ++i) {
    const InterfaceTarget& source = set->sources[i];
    const std::string path = "target.sources[" + std::to_string(i) + "]";
    if (source.ifname.empty()) {
      return Status(StatusCode::kInvalidArgument, path + ".ifname: required");
    }
    if (source == set->sinks[0]) {
      return Status(StatusCode::kInvalidArgument,
                    path + ": " + endpointName(source) + " is the sink; it cannot send to itself");
    }
    for (size_t j = 0; j < i; ++j) {
      if (set->sources[j] == source) {
        return Status(StatusCode::kInvalidArgument,
                      path + ": " + endpointName(source) + " is listed twice");
      }
    }
  }
  if (set->sinks[0].ifname.empty()) {
    return Status(StatusCode::kInvalidArgument, "target.sinks[0].ifname: required");
  }
  return *set;
}

json emitterJson(const sys::EmitterState& state) {
  json out = {{"running", state.running}, {"pid", state.pid}, {"report", state.last_report}};
  if (state.exit_code) out["exit_code"] = *state.exit_code;
  if (!state.log_tail.empty()) out["log"] = state.log_tail;
  return out;
}

}  // namespace

double jainFairnessIndex(const std::vector<double>& shares) {
  double sum = 0;
  double squares = 0;
  for (double share : shares) {
    sum += share;
    squares += share * share;
  }
  if (shares.empty() || squares <= 0) return 1.0;
  return sum * sum / (static_cast<double>(shares.size()) * squares);
}

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
  return {self_exe, "traffic", "sink", "--listen",
          sink_address + ":" + std::to_string(p["port"].get<int>())};
}

std::vector<std::string> Incast::sourceArgv(const std::string& self_exe,
                                            const std::string& sink_address, const json& params) {
  const json p = withDefaults(incastSpec(), params);
  std::vector<std::string> argv{self_exe,
                                "traffic",
                                "source",
                                "--connect",
                                sink_address + ":" + std::to_string(p["port"].get<int>()),
                                "--flows",
                                std::to_string(p["flows_per_source"].get<int>()),
                                "--message-bytes",
                                std::to_string(p["message_bytes"].get<int64_t>()),
                                "--dscp",
                                std::to_string(p["dscp"].get<int>())};
  if (p.contains("rate_mbps")) {
    argv.insert(argv.end(), {"--rate-mbps", std::to_string(p["rate_mbps"].get<int64_t>())});
  }
  if (p.contains("congestion_control")) {
    argv.insert(argv.end(), {"--congestion-control", p["congestion_control"].get<std::string>()});
  }
  return argv;
}

core::Result<std::string> Incast::sinkAddress(const InterfaceTarget& sink) {
  auto addresses = links_->ipv4Addresses(sink.netns, sink.ifname);
  if (!addresses.isOk()) return addresses.status();
  if (addresses->empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "the sink " + endpointName(sink) + " has no IPv4 address to listen on");
  }
  return addresses->front();
}

core::Result<json> Incast::capture(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) {
    return Status(StatusCode::kNotSupported, "incast needs the emitters and this program's path");
  }
  for (const InterfaceTarget& source : target->sources) {
    auto link = links_->getLink(source.netns, source.ifname);
    if (!link.isOk()) return link.status().withContext("incast capture");
  }
  auto address = sinkAddress(target->sinks[0]);
  if (!address.isOk()) return address.status().withContext("incast capture");
  return json{{"sink_address", *address}};
}

Status Incast::apply(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr || emitters_ == nullptr || self_exe_.empty()) {
    return Status(StatusCode::kNotSupported, "incast needs the emitters and this program's path");
  }
  FC_RETURN_IF_ERROR(validate(fault.params));
  const InterfaceTarget& sink = target->sinks[0];
  auto address = sinkAddress(sink);
  if (!address.isOk()) return address.status().withContext("incast on " + describe(fault));

  sys::EmitterSpec sink_spec;
  sink_spec.key = sinkKey(sink);
  sink_spec.argv = sinkArgv(self_exe_, *address, fault.params);
  sink_spec.netns = sink.netns;
  FC_RETURN_IF_ERROR(
      emitters_->start(sink_spec).withContext("incast sink on " + endpointName(sink)));
  std::vector<std::string> started{sink_spec.key};
  for (const InterfaceTarget& source : target->sources) {
    sys::EmitterSpec spec;
    spec.key = sourceKey(source, sink);
    spec.argv = sourceArgv(self_exe_, *address, fault.params);
    spec.netns = source.netns;
    Status status = emitters_->start(spec);
    if (!status.isOk()) {
      // Nothing half-started stays behind: a failed apply leaves no traffic on the fabric.
      for (auto it = started.rbegin(); it != started.rend(); ++it) {
        (void)emitters_->stop(*it, kStopGraceMs);
      }
      return status.withContext("incast source on " + endpointName(source));
    }
    started.push_back(spec.key);
  }
  return Status::ok();
}

Status Incast::revert(const Fault& fault, const json& /*prior*/) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) {
    return Status(StatusCode::kNotSupported, "incast needs the emitters and this program's path");
  }
  const InterfaceTarget& sink = target->sinks[0];
  Status first = Status::ok();
  for (const InterfaceTarget& source : target->sources) {
    auto stopped = emitters_->stop(sourceKey(source, sink), kStopGraceMs);
    if (!stopped.isOk() && first.isOk()) {
      first = stopped.status().withContext("incast stop on " + endpointName(source));
    }
  }
  auto stopped = emitters_->stop(sinkKey(sink), kStopGraceMs);
  if (!stopped.isOk() && first.isOk()) {
    first = stopped.status().withContext("incast stop on " + endpointName(sink));
  }
  return first;
}

core::Result<json> Incast::observe(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (emitters_ == nullptr) {
    return Status(StatusCode::kNotSupported, "incast needs the emitters and this program's path");
  }
  const InterfaceTarget& sink = target->sinks[0];
  bool all_running = true;
  json out = json::object();
  // The first generator that is not running lends its exit code and log to the top level, which
  // the engine's health check quotes.
  auto note = [&](const sys::EmitterState& state) {
    if (state.running || !all_running) return;
    all_running = false;
    if (state.exit_code) out["exit_code"] = *state.exit_code;
    if (!state.log_tail.empty()) out["log"] = state.log_tail;
  };
  auto sink_state = emitters_->state(sinkKey(sink));
  if (!sink_state.isOk()) return sink_state.status().withContext("incast observe");
  note(*sink_state);
  out["sink"] = emitterJson(*sink_state);
  out["sink"]["endpoint"] = endpointName(sink);
  json sources = json::array();
  std::vector<double> bytes;
  std::vector<double> goodput;
  for (const InterfaceTarget& source : target->sources) {
    auto state = emitters_->state(sourceKey(source, sink));
    if (!state.isOk()) return state.status().withContext("incast observe");
    note(*state);
    json entry = emitterJson(*state);
    entry["endpoint"] = endpointName(source);
    sources.push_back(std::move(entry));
    const json& report = state->last_report;
    bytes.push_back(report.is_object() ? report.value("bytes", 0.0) : 0.0);
    // Mean goodput since the source started: bytes over its own clock.
    const double t_ms = report.is_object() ? report.value("t_ms", 0.0) : 0.0;
    goodput.push_back(t_ms > 0 ? bytes.back() * 8 / (t_ms * 1000) : 0.0);
  }
  out["running"] = all_running;
  out["sources"] = std::move(sources);
  out["source_bytes"] = bytes;
  out["source_goodput_mbps"] = goodput;
  out["jain_fairness"] = jainFairnessIndex(bytes);
  return out;
}

}  // namespace fabric_chaos::injectors
