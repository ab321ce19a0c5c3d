#include "scenarios/model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>

#include "scenarios/json_fields.h"
#include "scenarios/plan.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using json_fields::checkObject;
using json_fields::checkRoot;
using json_fields::child;
using json_fields::element;
using json_fields::find;
using json_fields::invalid;
using json_fields::readNonEmptyString;
using json_fields::readRequiredString;
using json_fields::readString;
using json_fields::unacceptable;

constexpr size_t kMaxSteps = 64;
// The kernel's IB_DEVICE_NAME_MAX less its terminating NUL.
constexpr size_t kMaxRdmaDeviceName = 63;

std::optional<int64_t> asInt64(const json& value) {
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

std::string range(int64_t lo, int64_t hi) {
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

// An optional integer field in [lo, hi]; `out` keeps its default when the field is absent.
template <typename Int>
Status readInt(const json& obj, const std::string& path, std::string_view key, int64_t lo,
               int64_t hi, Int& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return Status::ok();
  const std::string expected = "must be an integer in " + range(lo, hi);
  const std::optional<int64_t> v = asInt64(*value);
  if (!v) {
    if (value->is_number_unsigned()) return unacceptable(child(path, key), expected);
    return invalid(child(path, key), expected);
  }
  if (*v < lo || *v > hi) return unacceptable(child(path, key), expected);
  out = static_cast<Int>(*v);
  return Status::ok();
}

// An optional time offset or length: 0..kMaxTimeMs.
Status readTime(const json& obj, const std::string& path, std::string_view key, int64_t& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return Status::ok();
  const std::optional<int64_t> v = asInt64(*value);
  if (!v) {
    if (value->is_number_unsigned()) {
      return unacceptable(child(path, key), "must be at most " + std::to_string(kMaxTimeMs));
    }
    return invalid(child(path, key), "must be a non-negative integer");
  }
  if (*v < 0) return unacceptable(child(path, key), "must be a non-negative integer");
  if (*v > kMaxTimeMs) {
    return unacceptable(child(path, key), "must be at most " + std::to_string(kMaxTimeMs));
  }
  out = *v;
  return Status::ok();
}

// An optional number in [lo, hi], or in (lo, hi) when `open`.
Status readNumber(const json& obj, const std::string& path, std::string_view key, double lo,
                  double hi, bool open, const std::string& expected, double& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return Status::ok();
  if (!value->is_number()) return invalid(child(path, key), expected);
  const double v = value->get<double>();
  const bool in_range = open ? (v > lo && v < hi) : (v >= lo && v <= hi);
  if (!std::isfinite(v) || !in_range) return unacceptable(child(path, key), expected);
  out = v;
  return Status::ok();
}

Status readOptionalNumber(const json& obj, const std::string& path, std::string_view key, double lo,
                          double hi, const std::string& expected, std::optional<double>& out) {
  if (find(obj, key) == nullptr) return Status::ok();
  double v = 0;
  FC_RETURN_IF_ERROR(readNumber(obj, path, key, lo, hi, /*open=*/false, expected, v));
  out = v;
  return Status::ok();
}

Status parseHosts(const json& obj, const std::string& path, std::vector<std::string>& out) {
  if (const json* hosts = find(obj, "hosts")) {
    const std::string hosts_path = child(path, "hosts");
    if (!hosts->is_array()) return invalid(hosts_path, "must be an array of host names");
    std::set<std::string> seen;
    for (size_t i = 0; i < hosts->size(); ++i) {
      std::string host;
      FC_RETURN_IF_ERROR(readNonEmptyString((*hosts)[i], element(hosts_path, i), host));
      if (!seen.insert(host).second) {
        return unacceptable(element(hosts_path, i), "duplicate host " + host);
      }
      out.push_back(std::move(host));
    }
  }
  return Status::ok();
}

Status parseWorkload(const json& obj, const std::string& path, WorkloadSpec& out) {
  if (!obj.is_object()) return invalid(path, "must be a JSON object");
  if (const json* kind = find(obj, "kind")) {
    const std::string expected = "must be \"ring\", \"exec\" or \"pytorch-ddp\"";
    if (!kind->is_string()) return invalid(child(path, "kind"), expected);
    const auto parsed = parseWorkloadKind(kind->get<std::string>());
    if (!parsed) return unacceptable(child(path, "kind"), expected);
    out.kind = *parsed;
  }
  if (out.kind != WorkloadKind::kRing) {
    for (const char* ring_field : {"transport", "message_bytes", "compute_ms", "peer_timeout_ms",
                                   "reconnect_budget_ms", "dscp"}) {
      if (find(obj, ring_field) != nullptr) {
        return invalid(child(path, ring_field), "is a field of the ring workload, not of " +
                                                    std::string(workloadKindName(out.kind)));
      }
    }
    FC_RETURN_IF_ERROR(
        checkObject(obj, path,
                    {"kind", "hosts", "command", "env", "parser", "master_port", "silence_ms",
                     "start_timeout_ms", "samples_from", "python", "args", "launcher", "slurm"}));
    FC_RETURN_IF_ERROR(parseHosts(obj, path, out.hosts));
    return parseExecWorkload(obj, path, out.kind, out.exec);
  }
  for (const char* exec_field : {"launcher", "slurm"}) {
    if (find(obj, exec_field) != nullptr) {
      return invalid(child(path, exec_field),
                     "is for external workloads (exec, pytorch-ddp): the ring's ranks are started "
                     "by the agents");
    }
  }
  FC_RETURN_IF_ERROR(checkObject(obj, path,
                                 {"kind", "transport", "hosts", "message_bytes", "compute_ms",
                                  "peer_timeout_ms", "reconnect_budget_ms", "dscp"}));
  if (const json* transport = find(obj, "transport")) {
    const std::string expected = "must be \"tcp\", \"verbs\" or \"ib_probe\"";
    if (!transport->is_string()) return invalid(child(path, "transport"), expected);
    if (*transport != "tcp" && *transport != "verbs" && *transport != "ib_probe") {
      return unacceptable(child(path, "transport"), expected);
    }
    out.transport = transport->get<std::string>();
  }
  FC_RETURN_IF_ERROR(parseHosts(obj, path, out.hosts));
  FC_RETURN_IF_ERROR(
      readInt(obj, path, "message_bytes", 4096, int64_t{1} << 30, out.message_bytes));
  FC_RETURN_IF_ERROR(readInt(obj, path, "compute_ms", 0, 60000, out.compute_ms));
  FC_RETURN_IF_ERROR(readInt(obj, path, "peer_timeout_ms", 100, 600000, out.peer_timeout_ms));
  FC_RETURN_IF_ERROR(
      readInt(obj, path, "reconnect_budget_ms", 0, 3600000, out.reconnect_budget_ms));
  int64_t dscp = out.dscp;
  FC_RETURN_IF_ERROR(readInt(obj, path, "dscp", 0, 63, dscp));
  out.dscp = static_cast<int>(dscp);
  return Status::ok();
}

// rdma_device, rdma_port, gid_index: an RDMA port on the selected host or rank's machine.
Status parseRdmaPort(const json& obj, const std::string& path, bool on_one_machine,
                     TargetSelector& out) {
  const json* device = find(obj, "rdma_device");
  for (const char* key : {"rdma_port", "gid_index"}) {
    if (device == nullptr && find(obj, key) != nullptr) {
      return invalid(child(path, key), "goes with rdma_device");
    }
  }
  if (device == nullptr) return Status::ok();
  if (!on_one_machine) {
    return invalid(child(path, "rdma_device"), "names a device on the selected host or rank");
  }
  FC_RETURN_IF_ERROR(readNonEmptyString(*device, child(path, "rdma_device"), out.rdma_device));
  if (out.rdma_device.size() > kMaxRdmaDeviceName) {
    return invalid(child(path, "rdma_device"), "an RDMA device name is at most 63 characters");
  }
  // The ranges injectors::RdmaPortTarget takes (8-bit port numbers, 16-bit GID table indexes).
  if (find(obj, "rdma_port") != nullptr) {
    FC_RETURN_IF_ERROR(readInt(obj, path, "rdma_port", 1, 255, out.rdma_port.emplace()));
  }
  if (find(obj, "gid_index") != nullptr) {
    FC_RETURN_IF_ERROR(readInt(obj, path, "gid_index", 0, 65535, out.gid_index.emplace()));
  }
  return Status::ok();
}

Status parseTarget(const json& obj, const std::string& path, TargetSelector& out) {
  FC_RETURN_IF_ERROR(checkObject(obj, path,
                                 {"host", "link", "labels", "sm", "rank", "process", "rdma_device",
                                  "rdma_port", "gid_index", "side", "sources", "sink"}));
  const json* host = find(obj, "host");
  const json* link = find(obj, "link");
  const json* labels = find(obj, "labels");
  const json* sm = find(obj, "sm");
  const json* rank = find(obj, "rank");
  if ((host != nullptr) + (link != nullptr) + (labels != nullptr) + (sm != nullptr) +
          (rank != nullptr) !=
      1) {
    return invalid(path, "exactly one of host, link, labels, sm, rank");
  }
  if (rank != nullptr) {
    if (!rank->is_number_integer() || rank->get<int64_t>() < 0 || rank->get<int64_t>() > 1 << 20) {
      return invalid(child(path, "rank"), "must be a workload rank (an integer from 0)");
    }
    out.rank = rank->get<int>();
  }
  if (const json* process = find(obj, "process")) {
    if (host == nullptr) return invalid(child(path, "process"), "names processes on a host");
    FC_RETURN_IF_ERROR(readNonEmptyString(*process, child(path, "process"), out.process));
    if (out.process.size() > 15) {
      return invalid(child(path, "process"),
                     "a process name is at most 15 characters (/proc/PID/comm)");
    }
  }
  FC_RETURN_IF_ERROR(parseRdmaPort(obj, path, host != nullptr || rank != nullptr, out));
  if (sm != nullptr) FC_RETURN_IF_ERROR(readNonEmptyString(*sm, child(path, "sm"), out.sm));
  if (host != nullptr) FC_RETURN_IF_ERROR(readNonEmptyString(*host, child(path, "host"), out.host));
  if (link != nullptr) FC_RETURN_IF_ERROR(readNonEmptyString(*link, child(path, "link"), out.link));
  if (labels != nullptr) {
    const std::string labels_path = child(path, "labels");
    if (!labels->is_object() || labels->empty()) {
      return invalid(labels_path, "must be a non-empty object of label names to values");
    }
    for (const auto& [key, value] : labels->items()) {
      if (key.empty()) return invalid(labels_path, "label names must not be empty");
      if (!value.is_string()) return invalid(child(labels_path, key), "must be a string");
      out.labels[key] = value.get<std::string>();
    }
  }
  if (const json* side = find(obj, "side")) {
    const std::string expected = "must be \"switch\", \"host\" or \"peer\"";
    if (!side->is_string()) return invalid(child(path, "side"), expected);
    const std::optional<LinkSide> parsed = parseLinkSide(side->get<std::string>());
    if (!parsed) return unacceptable(child(path, "side"), expected);
    out.side = *parsed;
  }
  if (const json* sources = find(obj, "sources")) {
    const std::string sources_path = child(path, "sources");
    if (!sources->is_array() || sources->empty()) {
      return invalid(sources_path, "must be a non-empty array of host names");
    }
    for (size_t i = 0; i < sources->size(); ++i) {
      std::string name;
      FC_RETURN_IF_ERROR(
          readNonEmptyString((*sources)[i], sources_path + "[" + std::to_string(i) + "]", name));
      if (std::find(out.sources.begin(), out.sources.end(), name) != out.sources.end()) {
        return invalid(sources_path + "[" + std::to_string(i) + "]",
                       "host " + name + " is listed twice");
      }
      out.sources.push_back(std::move(name));
    }
  }
  if (const json* sink = find(obj, "sink")) {
    FC_RETURN_IF_ERROR(readNonEmptyString(*sink, child(path, "sink"), out.sink));
  }
  return Status::ok();
}

Status parseStep(const json& obj, const std::string& path, FaultStep& out) {
  FC_RETURN_IF_ERROR(checkObject(obj, path, {"kind", "target", "at_ms", "duration_ms", "params"}));
  FC_RETURN_IF_ERROR(readRequiredString(obj, path, "kind", out.kind));
  const json* target = find(obj, "target");
  if (target == nullptr) return invalid(child(path, "target"), "required");
  FC_RETURN_IF_ERROR(parseTarget(*target, child(path, "target"), out.target));
  FC_RETURN_IF_ERROR(readTime(obj, path, "at_ms", out.at_ms));
  FC_RETURN_IF_ERROR(readTime(obj, path, "duration_ms", out.duration_ms));
  if (const json* params = find(obj, "params")) {
    if (!params->is_object()) return invalid(child(path, "params"), "must be an object");
    out.params = *params;
  }
  return Status::ok();
}

Status parseGates(const json& obj, const std::string& path, Gates& out) {
  FC_RETURN_IF_ERROR(
      checkObject(obj, path,
                  {"min_score", "max_recovery_ms", "min_retained", "max_p99_slowdown",
                   "max_sm_takeover_ms", "max_reroute_ms", "require_survival"}));
  FC_RETURN_IF_ERROR(readOptionalNumber(obj, path, "min_score", 0, 100,
                                        "must be a number in [0, 100]", out.min_score));
  FC_RETURN_IF_ERROR(
      readOptionalNumber(obj, path, "max_recovery_ms", 0, static_cast<double>(kMaxTimeMs),
                         "must be a non-negative number of milliseconds", out.max_recovery_ms));
  FC_RETURN_IF_ERROR(readOptionalNumber(obj, path, "min_retained", 0, 1,
                                        "must be a number in [0, 1]", out.min_retained));
  FC_RETURN_IF_ERROR(readOptionalNumber(obj, path, "max_p99_slowdown", 1, 1e6,
                                        "must be a number of at least 1", out.max_p99_slowdown));
  FC_RETURN_IF_ERROR(
      readOptionalNumber(obj, path, "max_sm_takeover_ms", 0, static_cast<double>(kMaxTimeMs),
                         "must be a non-negative number of milliseconds", out.max_sm_takeover_ms));
  FC_RETURN_IF_ERROR(
      readOptionalNumber(obj, path, "max_reroute_ms", 0, static_cast<double>(kMaxTimeMs),
                         "must be a non-negative number of milliseconds", out.max_reroute_ms));
  if (const json* survival = find(obj, "require_survival")) {
    if (!survival->is_boolean()) {
      return invalid(child(path, "require_survival"), "must be true or false");
    }
    out.require_survival = survival->get<bool>();
  }
  return Status::ok();
}

Status parseStopConditions(const json& obj, const std::string& path, StopConditions& out) {
  FC_RETURN_IF_ERROR(checkObject(obj, path, {"min_busbw_fraction", "for_ms", "on_rank_death"}));
  if (find(obj, "min_busbw_fraction") != nullptr) {
    double fraction = 0;
    FC_RETURN_IF_ERROR(readNumber(obj, path, "min_busbw_fraction", 0, 1, /*open=*/true,
                                  "must be a number in (0, 1)", fraction));
    out.min_busbw_fraction = fraction;
  }
  FC_RETURN_IF_ERROR(readTime(obj, path, "for_ms", out.for_ms));
  if (out.min_busbw_fraction && out.for_ms <= 0) {
    return unacceptable(child(path, "for_ms"), "must be > 0 when min_busbw_fraction is set");
  }
  if (!out.min_busbw_fraction && find(obj, "for_ms") != nullptr) {
    // A lone for_ms would silently watch nothing.
    return unacceptable(child(path, "for_ms"), "needs min_busbw_fraction");
  }
  if (const json* on_death = find(obj, "on_rank_death")) {
    if (!on_death->is_boolean()) {
      return invalid(child(path, "on_rank_death"), "must be true or false");
    }
    out.on_rank_death = on_death->get<bool>();
  }
  return Status::ok();
}

Status parseInto(const json& doc, Scenario& out) {
  FC_RETURN_IF_ERROR(checkRoot(doc, "scenario",
                               {"version", "name", "description", "fabric", "workload",
                                "baseline_ms", "steps", "recovery_ms", "tolerance",
                                "recovered_after", "max_duration_ms", "gates", "stop_conditions"}));
  const json* version = find(doc, "version");
  if (version == nullptr) return invalid("version", "required");
  if (asInt64(*version) != std::optional<int64_t>(1)) return invalid("version", "must be 1");
  out.version = 1;

  const json* name = find(doc, "name");
  if (name == nullptr) return invalid("name", "required");
  if (!name->is_string()) return invalid("name", "must be a string");
  out.name = name->get<std::string>();
  if (!isValidScenarioName(out.name)) {
    return invalid("name", "\"" + out.name +
                               "\" is not a valid name: 1-64 characters from a-z 0-9 . _ -, "
                               "starting with a letter or digit");
  }
  FC_RETURN_IF_ERROR(readString(doc, "", "description", out.description));
  FC_RETURN_IF_ERROR(readString(doc, "", "fabric", out.fabric));

  if (const json* workload = find(doc, "workload")) {
    FC_RETURN_IF_ERROR(parseWorkload(*workload, "workload", out.workload));
  }
  FC_RETURN_IF_ERROR(readInt(doc, "", "baseline_ms", 500, 3600000, out.baseline_ms));
  if (const json* steps = find(doc, "steps")) {
    if (!steps->is_array()) return invalid("steps", "must be an array");
    if (steps->size() > kMaxSteps) {
      return unacceptable("steps", "at most " + std::to_string(kMaxSteps) +
                                       " steps are allowed, got " + std::to_string(steps->size()));
    }
    for (size_t i = 0; i < steps->size(); ++i) {
      FaultStep step;
      FC_RETURN_IF_ERROR(parseStep((*steps)[i], element("steps", i), step));
      out.steps.push_back(std::move(step));
    }
  }
  FC_RETURN_IF_ERROR(readInt(doc, "", "recovery_ms", 500, 3600000, out.recovery_ms));
  FC_RETURN_IF_ERROR(readNumber(doc, "", "tolerance", 0, 1, /*open=*/true,
                                "must be a number in (0, 1)", out.tolerance));
  FC_RETURN_IF_ERROR(readInt(doc, "", "recovered_after", 1, 1000, out.recovered_after));
  FC_RETURN_IF_ERROR(readInt(doc, "", "max_duration_ms", 1000, kMaxTimeMs, out.max_duration_ms));
  if (const json* gates = find(doc, "gates")) {
    FC_RETURN_IF_ERROR(parseGates(*gates, "gates", out.gates));
  }
  if (const json* stop = find(doc, "stop_conditions")) {
    FC_RETURN_IF_ERROR(parseStopConditions(*stop, "stop_conditions", out.stop_conditions));
  }
  return Status::ok();
}

json targetToJson(const TargetSelector& target) {
  json out = json::object();
  if (!target.host.empty()) out["host"] = target.host;
  if (!target.link.empty()) out["link"] = target.link;
  if (!target.labels.empty()) out["labels"] = target.labels;
  if (!target.sm.empty()) out["sm"] = target.sm;
  if (target.rank) out["rank"] = *target.rank;
  if (!target.process.empty()) out["process"] = target.process;
  if (!target.rdma_device.empty()) out["rdma_device"] = target.rdma_device;
  if (target.rdma_port) out["rdma_port"] = *target.rdma_port;
  if (target.gid_index) out["gid_index"] = *target.gid_index;
  out["side"] = std::string(linkSideName(target.side));
  if (!target.sources.empty()) out["sources"] = target.sources;
  if (!target.sink.empty()) out["sink"] = target.sink;
  return out;
}

// Clamped time parts can be summed without overflow.
int64_t clampTime(int64_t v) { return std::clamp<int64_t>(v, 0, kMaxTimeMs); }

}  // namespace

std::string_view linkSideName(LinkSide side) {
  switch (side) {
    case LinkSide::kSwitch:
      return "switch";
    case LinkSide::kHost:
      return "host";
    case LinkSide::kPeer:
      return "peer";
  }
  return "switch";
}

std::optional<LinkSide> parseLinkSide(std::string_view name) {
  for (LinkSide side : {LinkSide::kSwitch, LinkSide::kHost, LinkSide::kPeer}) {
    if (linkSideName(side) == name) return side;
  }
  return std::nullopt;
}

std::string TargetSelector::describe() const {
  std::string out;
  if (!host.empty()) {
    out = "host " + host + (process.empty() ? "" : " process " + process);
  } else if (!link.empty()) {
    out = "link " + link;
  } else if (!labels.empty()) {
    out = "labels {";
    bool first = true;
    for (const auto& [key, value] : labels) {
      if (!first) out += ", ";
      first = false;
      out += key + "=" + value;
    }
    out += "}";
  } else if (!sm.empty()) {
    out = "sm " + sm;
  } else if (rank) {
    out = "rank " + std::to_string(*rank);
  } else {
    return "(empty selector)";
  }
  if (!rdma_device.empty()) {
    out += " rdma " + rdma_device + "/" + std::to_string(rdma_port.value_or(1));
    if (gid_index) out += " gid " + std::to_string(*gid_index);
  }
  for (size_t i = 0; i < sources.size(); ++i) out += (i == 0 ? " from " : ", ") + sources[i];
  if (!sink.empty()) out += " to " + sink;
  return out;
}

int64_t Scenario::plannedDurationMs() const {
  // Every part is clamped to [0, kMaxTimeMs], so the sum stays far below INT64_MAX even for a
  // Scenario built in code with absurd values.
  int64_t last_end = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const FaultStep& step = steps[i];
    int64_t end = clampTime(step.at_ms) + clampTime(step.duration_ms);
    auto phases = stepPhases(step, static_cast<int>(i));
    if (phases.isOk() && !phases->empty()) end = phases->back().revert_at_ms;
    last_end = std::max(last_end, end);
  }
  return clampTime(baseline_ms) + clampTime(last_end) + clampTime(recovery_ms);
}

bool isValidScenarioName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_or_digit(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(),
                     [&](char c) { return lower_or_digit(c) || c == '.' || c == '_' || c == '-'; });
}

core::Result<Scenario> parseScenario(const json& doc) {
  Scenario scenario;
  FC_RETURN_IF_ERROR(parseInto(doc, scenario));
  return scenario;
}

json toJson(const Scenario& scenario) {
  json steps = json::array();
  for (const FaultStep& step : scenario.steps) {
    steps.push_back({{"kind", step.kind},
                     {"target", targetToJson(step.target)},
                     {"at_ms", step.at_ms},
                     {"duration_ms", step.duration_ms},
                     {"params", step.params.is_null() ? json::object() : step.params}});
  }
  json gates = {{"require_survival", scenario.gates.require_survival}};
  if (scenario.gates.min_score) gates["min_score"] = *scenario.gates.min_score;
  if (scenario.gates.max_recovery_ms) gates["max_recovery_ms"] = *scenario.gates.max_recovery_ms;
  if (scenario.gates.min_retained) gates["min_retained"] = *scenario.gates.min_retained;
  if (scenario.gates.max_p99_slowdown) {
    gates["max_p99_slowdown"] = *scenario.gates.max_p99_slowdown;
  }
  if (scenario.gates.max_sm_takeover_ms) {
    gates["max_sm_takeover_ms"] = *scenario.gates.max_sm_takeover_ms;
  }
  if (scenario.gates.max_reroute_ms) gates["max_reroute_ms"] = *scenario.gates.max_reroute_ms;
  json stop = {{"on_rank_death", scenario.stop_conditions.on_rank_death}};
  if (scenario.stop_conditions.min_busbw_fraction) {
    stop["min_busbw_fraction"] = *scenario.stop_conditions.min_busbw_fraction;
    stop["for_ms"] = scenario.stop_conditions.for_ms;
  }
  const WorkloadSpec& w = scenario.workload;
  json workload;
  if (w.kind == WorkloadKind::kRing) {
    workload = {{"transport", w.transport},
                {"hosts", w.hosts},
                {"message_bytes", w.message_bytes},
                {"compute_ms", w.compute_ms},
                {"peer_timeout_ms", w.peer_timeout_ms},
                {"reconnect_budget_ms", w.reconnect_budget_ms},
                {"dscp", w.dscp}};
  } else {
    workload = execWorkloadJson(w.kind, w.exec);
    workload["kind"] = workloadKindName(w.kind);
    workload["hosts"] = w.hosts;
  }
  json doc = {{"version", scenario.version},
              {"name", scenario.name},
              {"description", scenario.description},
              {"workload", std::move(workload)},
              {"baseline_ms", scenario.baseline_ms},
              {"steps", std::move(steps)},
              {"recovery_ms", scenario.recovery_ms},
              {"tolerance", scenario.tolerance},
              {"recovered_after", scenario.recovered_after},
              {"max_duration_ms", scenario.max_duration_ms},
              {"gates", std::move(gates)},
              {"stop_conditions", std::move(stop)}};
  if (!scenario.fabric.empty()) doc["fabric"] = scenario.fabric;
  return doc;
}

}  // namespace fabric_chaos::scenarios
