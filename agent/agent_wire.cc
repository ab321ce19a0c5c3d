#include "agent/agent_wire.h"

#include <type_traits>

#include "core/json_keys.h"

namespace fabric_chaos::agent {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Status invalid(const std::string& field, const std::string& problem) {
  return Status(StatusCode::kInvalidArgument, field + ": " + problem);
}

Status onlyFields(const json& doc, std::initializer_list<std::string_view> allowed,
                  const std::string& prefix) {
  if (auto key = core::firstUnknownKey(doc, allowed))
    return invalid(prefix + *key, "unknown field");
  return Status::ok();
}

core::Result<int64_t> intField(const json& doc, const std::string& name, int64_t lo, int64_t hi,
                               int64_t fallback) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null()) return fallback;
  bool ok = false;
  int64_t value = 0;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    ok = v <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v) >= lo;
    value = static_cast<int64_t>(v);
  } else if (it->is_number_integer()) {
    value = it->get<int64_t>();
    ok = value >= lo && value <= hi;
  }
  if (!ok) {
    return invalid(name, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return value;
}

json execRankToJson(const ExecRankSpec& exec) {
  return json{{"command", exec.command},
              {"script", exec.script},
              {"env", exec.env},
              {"format", workload::stepFormatName(exec.parser.format)},
              {"pattern", exec.parser.pattern},
              {"placement", workload::ncclPlacementName(exec.parser.placement)},
              {"silence_ms", exec.silence_ms},
              {"reports_steps", exec.reports_steps},
              {"master_addr", exec.master_addr},
              {"master_port", exec.master_port},
              {"ifname", exec.ifname}};
}

core::Result<ExecRankSpec> execRankFromJson(const json& doc) {
  if (!doc.is_object()) return invalid("exec", "must be an object");
  FC_RETURN_IF_ERROR(
      onlyFields(doc, {"command", "script", "env", "format", "pattern", "placement", "silence_ms",
                       "reports_steps", "master_addr", "master_port", "ifname"}));
  ExecRankSpec exec;
  auto strings = [&](const char* name, std::vector<std::string>& out) -> Status {
    auto it = doc.find(name);
    if (it == doc.end()) return Status::ok();
    if (!it->is_array()) return invalid(std::string("exec.") + name, "must be an array");
    for (const json& item : *it) {
      if (!item.is_string()) return invalid(std::string("exec.") + name, "must hold strings");
      out.push_back(item.get<std::string>());
    }
    return Status::ok();
  };
  FC_RETURN_IF_ERROR(strings("command", exec.command));
  FC_RETURN_IF_ERROR(strings("env", exec.env));
  if (exec.command.empty()) return invalid("exec.command", "must name a program");
  auto text = [&](const char* name, const char* fallback, std::string& out) -> Status {
    auto it = doc.find(name);
    out = fallback;
    if (it == doc.end()) return Status::ok();
    if (!it->is_string()) return invalid(std::string("exec.") + name, "must be a string");
    out = it->get<std::string>();
    return Status::ok();
  };
  std::string format_name, placement_name;
  FC_RETURN_IF_ERROR(text("script", "", exec.script));
  FC_RETURN_IF_ERROR(text("pattern", "", exec.parser.pattern));
  FC_RETURN_IF_ERROR(text("format", "jsonl", format_name));
  FC_RETURN_IF_ERROR(text("placement", "out-of-place", placement_name));
  FC_RETURN_IF_ERROR(text("master_addr", "", exec.master_addr));
  FC_RETURN_IF_ERROR(text("ifname", "", exec.ifname));
  const auto format = workload::parseStepFormat(format_name);
  if (!format) return invalid("exec.format", "must be jsonl, regex or nccl-tests");
  exec.parser.format = *format;
  const auto placement = workload::parseNcclPlacement(placement_name);
  if (!placement) return invalid("exec.placement", "must be out-of-place or in-place");
  exec.parser.placement = *placement;
  if (auto it = doc.find("reports_steps"); it != doc.end()) {
    if (!it->is_boolean()) return invalid("exec.reports_steps", "must be a boolean");
    exec.reports_steps = it->get<bool>();
  }
  if (Status s = workload::checkStepParserSpec(exec.parser); !s.isOk()) {
    return invalid("exec", s.message());
  }
  auto silence = intField(doc, "silence_ms", 0, 86'400'000, exec.silence_ms);
  if (!silence.isOk()) return silence.status();
  exec.silence_ms = silence.value();
  auto port = intField(doc, "master_port", 0, 65535, exec.master_port);
  if (!port.isOk()) return port.status();
  exec.master_port = static_cast<int>(port.value());
  return exec;
}

json rankSpecToJson(const RankSpec& spec) {
  json doc = json{{"rank", spec.rank},
                  {"world", spec.world},
                  {"netns", spec.netns},
                  {"listen_addr", spec.listen_addr},
                  {"port", spec.port},
                  {"next_addr", spec.next_addr},
                  {"next_port", spec.next_port},
                  {"message_bytes", spec.message_bytes},
                  {"compute_ms", spec.compute_ms},
                  {"peer_timeout_ms", spec.peer_timeout_ms},
                  {"reconnect_budget_ms", spec.reconnect_budget_ms},
                  {"max_duration_ms", spec.max_duration_ms},
                  {"transport", spec.transport},
                  {"dscp", spec.dscp},
                  {"ib_node", spec.ib_node},
                  {"ib_preload", spec.ib_preload},
                  {"ib_dir", spec.ib_dir},
                  {"verbs_shim", spec.verbs_shim}};
  if (spec.transport == "exec") doc["exec"] = execRankToJson(spec.exec);
  return doc;
}

core::Result<RankSpec> rankSpecFromJson(const json& doc) {
  if (!doc.is_object()) return invalid("rank", "must be an object");
  FC_RETURN_IF_ERROR(onlyFields(doc, {"rank", "world", "netns", "listen_addr", "port", "next_addr",
                                      "next_port", "message_bytes", "compute_ms", "peer_timeout_ms",
                                      "reconnect_budget_ms", "max_duration_ms", "transport", "dscp",
                                      "ib_node", "ib_preload", "ib_dir", "verbs_shim", "exec"}));
  RankSpec spec;
  auto str = [&](const char* name, std::string& out) -> Status {
    auto it = doc.find(name);
    if (it == doc.end()) return Status::ok();
    if (!it->is_string()) return invalid(name, "must be a string");
    out = it->get<std::string>();
    return Status::ok();
  };
  auto num = [&](const char* name, int64_t lo, int64_t hi, auto& out) -> Status {
    auto value = intField(doc, name, lo, hi, static_cast<int64_t>(out));
    if (!value.isOk()) return value.status();
    out = static_cast<std::remove_reference_t<decltype(out)>>(value.value());
    return Status::ok();
  };
  constexpr int64_t kBig = int64_t{1} << 50;
  FC_RETURN_IF_ERROR(num("rank", 0, 1 << 20, spec.rank));
  FC_RETURN_IF_ERROR(num("world", 1, 1 << 20, spec.world));
  FC_RETURN_IF_ERROR(str("netns", spec.netns));
  FC_RETURN_IF_ERROR(str("listen_addr", spec.listen_addr));
  FC_RETURN_IF_ERROR(num("port", 0, 65535, spec.port));
  FC_RETURN_IF_ERROR(str("next_addr", spec.next_addr));
  FC_RETURN_IF_ERROR(num("next_port", 0, 65535, spec.next_port));
  FC_RETURN_IF_ERROR(num("message_bytes", 0, kBig, spec.message_bytes));
  FC_RETURN_IF_ERROR(num("compute_ms", 0, kBig, spec.compute_ms));
  FC_RETURN_IF_ERROR(num("peer_timeout_ms", 0, kBig, spec.peer_timeout_ms));
  FC_RETURN_IF_ERROR(num("reconnect_budget_ms", 0, kBig, spec.reconnect_budget_ms));
  FC_RETURN_IF_ERROR(num("max_duration_ms", 0, kBig, spec.max_duration_ms));
  FC_RETURN_IF_ERROR(str("transport", spec.transport));
  FC_RETURN_IF_ERROR(num("dscp", 0, 63, spec.dscp));
  FC_RETURN_IF_ERROR(str("ib_node", spec.ib_node));
  FC_RETURN_IF_ERROR(str("ib_preload", spec.ib_preload));
  FC_RETURN_IF_ERROR(str("ib_dir", spec.ib_dir));
  if (auto it = doc.find("verbs_shim"); it != doc.end()) {
    if (!it->is_boolean()) return invalid("verbs_shim", "must be a boolean");
    spec.verbs_shim = it->get<bool>();
  }
  if (spec.transport != "tcp" && spec.transport != "verbs" && spec.transport != "ib_probe" &&
      spec.transport != "exec") {
    return invalid("transport", "must be \"tcp\", \"verbs\", \"ib_probe\" or \"exec\"");
  }
  if (spec.transport == "exec") {
    auto exec = execRankFromJson(doc.value("exec", json()));
    if (!exec.isOk()) return exec.status();
    spec.exec = std::move(exec.value());
  }
  return spec;
}

json kindInfoToJson(const injectors::KindInfo& info) {
  return json{{"kind", info.kind},
              {"description", info.description},
              {"available", info.available},
              {"reason", info.reason},
              {"backend", info.backend}};
}

injectors::KindInfo kindInfoFromJson(const json& doc) {
  injectors::KindInfo info;
  if (!doc.is_object()) return info;
  auto str = [&](const char* name) {
    auto it = doc.find(name);
    return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  info.kind = str("kind");
  info.description = str("description");
  info.reason = str("reason");
  info.backend = str("backend");
  auto available = doc.find("available");
  info.available = available != doc.end() && available->is_boolean() && available->get<bool>();
  return info;
}

json shimProcessToJson(const sys::ShimProcess& shim) {
  return json{{"pid", shim.pid},
              {"comm", shim.comm},
              {"rank", shim.rank ? json(*shim.rank) : json(nullptr)},
              {"devices", shim.devices},
              {"armed", shim.armed}};
}

sys::ShimProcess shimProcessFromJson(const json& doc) {
  sys::ShimProcess shim;
  shim.pid = doc.value("pid", 0);
  shim.comm = doc.value("comm", "");
  if (doc.contains("rank") && doc["rank"].is_number_integer()) shim.rank = doc["rank"].get<int>();
  shim.devices = doc.value("devices", std::vector<std::string>{});
  shim.armed = doc.value("armed", json::array());
  return shim;
}

json agentInfoToJson(const AgentInfo& info) {
  json kinds = json::array();
  for (const auto& kind : info.kinds) kinds.push_back(kindInfoToJson(kind));
  json netdevs = json::array();
  for (const auto& dev : info.netdevs) {
    netdevs.push_back(
        {{"name", dev.name}, {"netns", dev.netns}, {"operstate", dev.operstate}, {"mac", dev.mac}});
  }
  json rdma = json::array();
  for (const auto& dev : info.rdma_devices) {
    json ports = json::array();
    for (const auto& port : dev.ports) {
      ports.push_back(
          {{"port", port.port}, {"state", port.state}, {"gid_table_size", port.gid_table_size}});
    }
    rdma.push_back({{"name", dev.name}, {"ports", ports}});
  }
  json shims = json::array();
  for (const auto& shim : info.verbs_shims) shims.push_back(shimProcessToJson(shim));
  return json{
      {"version", info.version},
      {"hostname", info.hostname},
      {"kinds", kinds},
      {"netdevs", netdevs},
      {"rdma_devices", rdma},
      {"verbs_shims", shims},
      {"clock", {{"steady_ns", info.clock.steady_ns}, {"realtime_ns", info.clock.realtime_ns}}}};
}

core::Result<AgentInfo> agentInfoFromJson(const json& doc) {
  // Unknown fields are ignored (a newer agent may say more); a field of the wrong type is an error.
  try {
    if (!doc.is_object()) return invalid("agent info", "must be an object");
    AgentInfo info;
    info.version = doc.value("version", "");
    info.hostname = doc.value("hostname", "");
    for (const auto& kind : doc.value("kinds", json::array())) {
      info.kinds.push_back(kindInfoFromJson(kind));
    }
    for (const auto& dev : doc.value("netdevs", json::array())) {
      info.netdevs.push_back({dev.value("name", ""), dev.value("netns", ""),
                              dev.value("operstate", ""), dev.value("mac", "")});
    }
    for (const auto& dev : doc.value("rdma_devices", json::array())) {
      sys::RdmaDevice device;
      device.name = dev.value("name", "");
      for (const auto& port : dev.value("ports", json::array())) {
        device.ports.push_back(
            {port.value("port", 1), port.value("state", ""), port.value("gid_table_size", 0)});
      }
      info.rdma_devices.push_back(std::move(device));
    }
    for (const auto& shim : doc.value("verbs_shims", json::array())) {
      info.verbs_shims.push_back(shimProcessFromJson(shim));
    }
    const json clock = doc.value("clock", json::object());
    info.clock.steady_ns = clock.value("steady_ns", int64_t{0});
    info.clock.realtime_ns = clock.value("realtime_ns", int64_t{0});
    return info;
  } catch (const json::exception& e) {
    return Status(StatusCode::kInvalidArgument, std::string("malformed agent info: ") + e.what());
  }
}

json rdmaCountersToJson(const std::vector<sys::RdmaPortCounters>& ports) {
  json out = json::array();
  for (const sys::RdmaPortCounters& port : ports) {
    json counters = json::object();
    for (const auto& [name, value] : port.counters) counters[name] = value;
    out.push_back({{"device", port.device}, {"port", port.port}, {"counters", counters}});
  }
  return json{{"ports", out}};
}

core::Result<std::vector<sys::RdmaPortCounters>> rdmaCountersFromJson(const json& doc) {
  try {
    if (!doc.is_object()) return invalid("rdma counters", "must be an object");
    std::vector<sys::RdmaPortCounters> ports;
    for (const json& port : doc.value("ports", json::array())) {
      sys::RdmaPortCounters decoded;
      decoded.device = port.at("device").get<std::string>();
      decoded.port = port.at("port").get<int>();
      const json counters = port.value("counters", json::object());
      for (const auto& [name, value] : counters.items()) {
        decoded.counters.emplace_back(name, value.get<int64_t>());
      }
      ports.push_back(std::move(decoded));
    }
    return ports;
  } catch (const json::exception& e) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("malformed RDMA counters: ") + e.what());
  }
}

}  // namespace fabric_chaos::agent
