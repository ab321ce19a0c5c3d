#include "injectors/model/target.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <initializer_list>

#include "core/json_keys.h"

namespace fabric_chaos::injectors {
namespace {

using nlohmann::json;

// Linux's PID_MAX_LIMIT: no pid is larger.
constexpr int64_t kMaxPid = 4194304;
// libibverbs numbers ports with a uint8_t, from 1.
constexpr int64_t kMaxRdmaPort = 255;
constexpr int64_t kMaxGidIndex = 65535;
constexpr size_t kMaxGuidDigits = 16;
// A switch has at most 254 external ports (IBA: port numbers are 8 bits, 255 is reserved).
constexpr int64_t kMaxIbPort = 254;
// What every process target holds (lockKeys).
constexpr const char* kEveryProcessKey = "process/*";

struct TypeName {
  TargetType type;
  const char* name;
};

constexpr TypeName kTypeNames[] = {
    {TargetType::kInterface, "interface"},          {TargetType::kRdmaPort, "rdma_port"},
    {TargetType::kSubnetManager, "subnet_manager"}, {TargetType::kProcess, "process"},
    {TargetType::kTrafficSet, "traffic_set"},       {TargetType::kIbPort, "ib_port"},
};

core::Status malformed(const std::string& field, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, field + ": " + problem);
}

std::string knownTypes() {
  std::string out;
  for (const TypeName& entry : kTypeNames) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

core::Status onlyFields(const json& doc, const std::string& path,
                        std::initializer_list<std::string_view> allowed) {
  if (auto key = core::firstUnknownKey(doc, allowed)) {
    return malformed(path + "." + *key, "unknown field");
  }
  return core::Status::ok();
}

// Required non-empty string when `required`; otherwise absent leaves `out` as it is.
core::Status readString(const json& doc, const std::string& path, const char* name, bool required,
                        std::string& out) {
  auto it = doc.find(name);
  const std::string field = path + "." + name;
  if (it == doc.end()) return required ? malformed(field, "required") : core::Status::ok();
  if (required) {
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
      return malformed(field, "must be a non-empty string");
    }
  } else if (!it->is_string()) {
    return malformed(field, "must be a string");
  }
  out = it->get<std::string>();
  return core::Status::ok();
}

// An integer (not 1.5, not "1", not true) in lo..hi; absent leaves `out` as it is.
core::Status readInt(const json& doc, const std::string& path, const char* name, int64_t lo,
                     int64_t hi, std::optional<int64_t>& out) {
  auto it = doc.find(name);
  if (it == doc.end()) return core::Status::ok();
  bool ok = false;
  int64_t value = 0;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    ok = v <= static_cast<uint64_t>(hi);
    value = ok ? static_cast<int64_t>(v) : 0;
    ok = ok && value >= lo;
  } else if (it->is_number_integer()) {
    value = it->get<int64_t>();
    ok = value >= lo && value <= hi;
  }
  if (!ok) {
    return malformed(path + "." + name,
                     "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  out = value;
  return core::Status::ok();
}

bool isGuid(const std::string& text) {
  if (text.size() < 3 || text.size() > 2 + kMaxGuidDigits) return false;
  if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return false;
  return std::all_of(text.begin() + 2, text.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

// 0x2C9 and 0x00000000000002c9 are one port: lock keys use 16 lowercase digits.
std::string canonicalGuid(const std::string& guid) {
  std::string digits = guid.size() > 2 ? guid.substr(2) : "";
  std::transform(digits.begin(), digits.end(), digits.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (digits.size() < kMaxGuidDigits) digits.insert(0, kMaxGuidDigits - digits.size(), '0');
  return "0x" + digits;
}

json interfaceJson(const InterfaceTarget& t) { return {{"netns", t.netns}, {"ifname", t.ifname}}; }

// The type tag is optional here: it is the old form, and traffic-set endpoints omit it.
core::Result<InterfaceTarget> interfaceFromJson(const json& doc, const std::string& path) {
  if (!doc.is_object()) return malformed(path, "must be an object");
  // The tag first: an endpoint of another type is better told so than about its fields.
  if (auto type = doc.find("type"); type != doc.end() && *type != "interface") {
    return malformed(path + ".type", "must be \"interface\" here");
  }
  FC_RETURN_IF_ERROR(onlyFields(doc, path, {"type", "netns", "ifname"}));
  InterfaceTarget target;
  FC_RETURN_IF_ERROR(readString(doc, path, "ifname", true, target.ifname));
  FC_RETURN_IF_ERROR(readString(doc, path, "netns", false, target.netns));
  return target;
}

core::Result<Target> rdmaPortFromJson(const json& doc, const std::string& path) {
  FC_RETURN_IF_ERROR(onlyFields(doc, path, {"type", "device", "port", "gid_index"}));
  RdmaPortTarget target;
  FC_RETURN_IF_ERROR(readString(doc, path, "device", true, target.device));
  if (target.device.find('/') != std::string::npos) {
    return malformed(path + ".device", "'" + target.device + "' is not a device name");
  }
  std::optional<int64_t> port;
  std::optional<int64_t> gid_index;
  FC_RETURN_IF_ERROR(readInt(doc, path, "port", 1, kMaxRdmaPort, port));
  FC_RETURN_IF_ERROR(readInt(doc, path, "gid_index", 0, kMaxGidIndex, gid_index));
  if (port) target.port = static_cast<int>(*port);
  if (gid_index) target.gid_index = static_cast<int>(*gid_index);
  return Target(std::move(target));
}

core::Result<Target> subnetManagerFromJson(const json& doc, const std::string& path) {
  FC_RETURN_IF_ERROR(onlyFields(doc, path, {"type", "port_guid", "node", "netns"}));
  if (doc.contains("port_guid") == doc.contains("node")) {
    return malformed(path, "set exactly one of port_guid, node");
  }
  SubnetManagerTarget target;
  FC_RETURN_IF_ERROR(readString(doc, path, "netns", false, target.netns));
  FC_RETURN_IF_ERROR(readString(doc, path, "port_guid", false, target.port_guid));
  FC_RETURN_IF_ERROR(readString(doc, path, "node", false, target.node));
  if (doc.contains("port_guid") && !isGuid(target.port_guid)) {
    return malformed(path + ".port_guid", "must be 0x followed by 1 to 16 hex digits");
  }
  if (doc.contains("node") && target.node.empty()) {
    return malformed(path + ".node", "must be a non-empty string");
  }
  return Target(std::move(target));
}

core::Result<Target> ibPortFromJson(const json& doc, const std::string& path) {
  FC_RETURN_IF_ERROR(onlyFields(doc, path, {"type", "node", "port", "netns"}));
  IbPortTarget target;
  FC_RETURN_IF_ERROR(readString(doc, path, "node", true, target.node));
  FC_RETURN_IF_ERROR(readString(doc, path, "netns", false, target.netns));
  // ibsim's console quotes node names: a quote or a bracket would end the name early.
  if (target.node.find_first_of("\"[]\n") != std::string::npos) {
    return malformed(path + ".node", "must not contain quotes, brackets or newlines");
  }
  std::optional<int64_t> port;
  FC_RETURN_IF_ERROR(readInt(doc, path, "port", 1, kMaxIbPort, port));
  if (!port) return malformed(path + ".port", "required");
  target.port = static_cast<int>(*port);
  return Target(std::move(target));
}

core::Result<Target> processFromJson(const json& doc, const std::string& path) {
  FC_RETURN_IF_ERROR(onlyFields(doc, path, {"type", "pid", "rank", "name"}));
  if (doc.contains("pid") + doc.contains("rank") + doc.contains("name") > 1) {
    return malformed(path, "set at most one of pid, rank, name (none: every process)");
  }
  ProcessTarget target;
  std::optional<int64_t> rank;
  FC_RETURN_IF_ERROR(readInt(doc, path, "pid", 1, kMaxPid, target.pid));
  FC_RETURN_IF_ERROR(readInt(doc, path, "rank", 0, INT_MAX, rank));
  if (rank) target.rank = static_cast<int>(*rank);
  if (doc.contains("name")) {
    FC_RETURN_IF_ERROR(readString(doc, path, "name", true, target.name));
    // Longer names never match: the kernel keeps the first 15 characters of a program's name.
    if (target.name.size() > kMaxProcessNameLength || target.name.find('\n') != std::string::npos) {
      return malformed(path + ".name", "must be a process name as /proc/PID/comm shows it (1 to " +
                                           std::to_string(kMaxProcessNameLength) +
                                           " characters, no newline)");
    }
  }
  return Target(std::move(target));
}

core::Status endpointsFromJson(const json& doc, const std::string& path, const char* name,
                               std::vector<InterfaceTarget>& out, bool may_be_empty = false) {
  const std::string field = path + "." + name;
  auto it = doc.find(name);
  if (it == doc.end()) return malformed(field, "required");
  if (!it->is_array() || (it->empty() && !may_be_empty)) {
    return malformed(field, "must be a non-empty array");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    auto endpoint = interfaceFromJson((*it)[i], field + "[" + std::to_string(i) + "]");
    if (!endpoint.isOk()) return endpoint.status();
    out.push_back(std::move(endpoint.value()));
  }
  return core::Status::ok();
}

core::Result<EcmpSteer> steerFromJson(const json& doc, const std::string& path) {
  if (!doc.is_object()) return malformed(path, "must be an object");
  FC_RETURN_IF_ERROR(onlyFields(doc, path, {"netns", "ingress", "egress"}));
  EcmpSteer steer;
  FC_RETURN_IF_ERROR(readString(doc, path, "netns", false, steer.netns));
  FC_RETURN_IF_ERROR(readString(doc, path, "ingress", true, steer.ingress));
  FC_RETURN_IF_ERROR(readString(doc, path, "egress", true, steer.egress));
  return steer;
}

core::Status pathsFromJson(const json& doc, const std::string& path, size_t sources,
                           std::vector<TrafficPath>& out) {
  auto it = doc.find("paths");
  if (it == doc.end()) return core::Status::ok();
  const std::string field = path + ".paths";
  if (!it->is_array() || it->empty()) return malformed(field, "must be a non-empty array");
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string item = field + "[" + std::to_string(i) + "]";
    const json& entry = (*it)[i];
    if (!entry.is_object()) return malformed(item, "must be an object");
    FC_RETURN_IF_ERROR(onlyFields(entry, item, {"port", "steers"}));
    TrafficPath traffic_path;
    if (!entry.contains("port")) return malformed(item + ".port", "required");
    auto port = interfaceFromJson(entry["port"], item + ".port");
    if (!port.isOk()) return port.status();
    traffic_path.port = std::move(port.value());
    auto steers = entry.find("steers");
    if (steers == entry.end() || !steers->is_array() || steers->size() != sources) {
      return malformed(item + ".steers", "must be an array of one steer per source (" +
                                             std::to_string(sources) + ")");
    }
    for (size_t j = 0; j < steers->size(); ++j) {
      auto steer = steerFromJson((*steers)[j], item + ".steers[" + std::to_string(j) + "]");
      if (!steer.isOk()) return steer.status();
      traffic_path.steers.push_back(std::move(steer.value()));
    }
    out.push_back(std::move(traffic_path));
  }
  return core::Status::ok();
}

core::Result<Target> trafficSetFromJson(const json& doc, const std::string& path) {
  FC_RETURN_IF_ERROR(
      onlyFields(doc, path, {"type", "sources", "sinks", "paths", "part", "sink_address"}));
  TrafficSetTarget target;
  if (auto it = doc.find("part"); it != doc.end()) {
    const std::string name = it->is_string() ? it->get<std::string>() : "";
    if (name == "sink") {
      target.part = TrafficPart::kSink;
    } else if (name == "sources") {
      target.part = TrafficPart::kSources;
    } else {
      return malformed(path + ".part", "must be \"sink\" or \"sources\"");
    }
  }
  // A sink part runs the sink alone: its sources are other parts'.
  FC_RETURN_IF_ERROR(
      endpointsFromJson(doc, path, "sources", target.sources, target.part == TrafficPart::kSink));
  FC_RETURN_IF_ERROR(endpointsFromJson(doc, path, "sinks", target.sinks));
  FC_RETURN_IF_ERROR(pathsFromJson(doc, path, target.sources.size(), target.paths));
  FC_RETURN_IF_ERROR(readString(doc, path, "sink_address", false, target.sink_address));
  if (target.part == TrafficPart::kSources && target.sink_address.empty()) {
    return malformed(path + ".sink_address", "required on a sources part");
  }
  if (target.part != TrafficPart::kSources && !target.sink_address.empty()) {
    return malformed(path + ".sink_address", "only a sources part carries the sink's address");
  }
  return Target(std::move(target));
}

std::string joinedInterfaces(const std::vector<InterfaceTarget>& endpoints) {
  std::string out;
  for (const InterfaceTarget& endpoint : endpoints) {
    if (!out.empty()) out += ", ";
    out += describe(Target(endpoint));
  }
  return out;
}

std::string interfaceKey(const InterfaceTarget& t) { return "if/" + t.netns + "/" + t.ifname; }

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
// Spelled out: clang 14 (the fuzz build) has no aggregate deduction.
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

TargetType typeOf(const Target& target) {
  return std::visit(Overloaded{
                        [](const InterfaceTarget&) { return TargetType::kInterface; },
                        [](const RdmaPortTarget&) { return TargetType::kRdmaPort; },
                        [](const SubnetManagerTarget&) { return TargetType::kSubnetManager; },
                        [](const ProcessTarget&) { return TargetType::kProcess; },
                        [](const TrafficSetTarget&) { return TargetType::kTrafficSet; },
                        [](const IbPortTarget&) { return TargetType::kIbPort; },
                    },
                    target);
}

std::string toString(TargetType type) {
  for (const TypeName& entry : kTypeNames) {
    if (entry.type == type) return entry.name;
  }
  return "unknown";
}

std::optional<TargetType> parseTargetType(std::string_view name) {
  for (const TypeName& entry : kTypeNames) {
    if (name == entry.name) return entry.type;
  }
  return std::nullopt;
}

json toJson(const Target& target) {
  json doc = std::visit(
      Overloaded{
          [](const InterfaceTarget& t) { return interfaceJson(t); },
          [](const RdmaPortTarget& t) {
            return json{{"device", t.device}, {"port", t.port}, {"gid_index", t.gid_index}};
          },
          [](const SubnetManagerTarget& t) {
            json doc =
                t.port_guid.empty() ? json{{"node", t.node}} : json{{"port_guid", t.port_guid}};
            if (!t.netns.empty()) doc["netns"] = t.netns;
            return doc;
          },
          [](const IbPortTarget& t) {
            json doc{{"node", t.node}, {"port", t.port}};
            if (!t.netns.empty()) doc["netns"] = t.netns;
            return doc;
          },
          [](const ProcessTarget& t) {
            if (t.pid) return json{{"pid", *t.pid}};
            if (t.rank) return json{{"rank", *t.rank}};
            if (!t.name.empty()) return json{{"name", t.name}};
            return json::object();
          },
          [](const TrafficSetTarget& t) {
            json sources = json::array();
            json sinks = json::array();
            for (const InterfaceTarget& s : t.sources) sources.push_back(interfaceJson(s));
            for (const InterfaceTarget& s : t.sinks) sinks.push_back(interfaceJson(s));
            json doc{{"sources", std::move(sources)}, {"sinks", std::move(sinks)}};
            if (t.part != TrafficPart::kWhole) doc["part"] = std::string(trafficPartName(t.part));
            if (!t.sink_address.empty()) doc["sink_address"] = t.sink_address;
            if (!t.paths.empty()) {
              json paths = json::array();
              for (const TrafficPath& p : t.paths) {
                json steers = json::array();
                for (const EcmpSteer& steer : p.steers) {
                  steers.push_back({{"netns", steer.netns},
                                    {"ingress", steer.ingress},
                                    {"egress", steer.egress}});
                }
                paths.push_back({{"port", interfaceJson(p.port)}, {"steers", std::move(steers)}});
              }
              doc["paths"] = std::move(paths);
            }
            return doc;
          },
      },
      target);
  doc["type"] = toString(typeOf(target));
  return doc;
}

core::Result<Target> targetFromJson(const json& doc, const std::string& path) {
  if (!doc.is_object()) return malformed(path, "must be an object");
  auto tag = doc.find("type");
  if (tag == doc.end()) {
    auto target = interfaceFromJson(doc, path);
    if (!target.isOk()) return target.status();
    return Target(std::move(target.value()));
  }
  if (!tag->is_string()) return malformed(path + ".type", "must be a string");
  const std::optional<TargetType> type = parseTargetType(tag->get_ref<const std::string&>());
  if (!type) {
    return malformed(path + ".type", "unknown target type \"" + tag->get<std::string>() +
                                         "\" (expected one of " + knownTypes() + ")");
  }
  switch (*type) {
    case TargetType::kInterface: {
      auto target = interfaceFromJson(doc, path);
      if (!target.isOk()) return target.status();
      return Target(std::move(target.value()));
    }
    case TargetType::kRdmaPort:
      return rdmaPortFromJson(doc, path);
    case TargetType::kSubnetManager:
      return subnetManagerFromJson(doc, path);
    case TargetType::kProcess:
      return processFromJson(doc, path);
    case TargetType::kTrafficSet:
      return trafficSetFromJson(doc, path);
    case TargetType::kIbPort:
      return ibPortFromJson(doc, path);
  }
  return malformed(path + ".type", "unknown target type");
}

std::string describe(const Target& target) {
  return std::visit(Overloaded{
                        [](const InterfaceTarget& t) {
                          return t.netns.empty() ? t.ifname : t.netns + "/" + t.ifname;
                        },
                        [](const RdmaPortTarget& t) {
                          return "RDMA port " + t.device + ":" + std::to_string(t.port) + " (gid " +
                                 std::to_string(t.gid_index) + ")";
                        },
                        [](const SubnetManagerTarget& t) {
                          return t.port_guid.empty() ? "subnet manager on node " + t.node
                                                     : "subnet manager " + t.port_guid;
                        },
                        [](const IbPortTarget& t) {
                          return "IB port " + t.node + "[" + std::to_string(t.port) + "]";
                        },
                        [](const ProcessTarget& t) {
                          if (t.pid) return "process " + std::to_string(*t.pid);
                          if (t.rank) return "workload rank " + std::to_string(*t.rank);
                          if (!t.name.empty()) return "processes named " + t.name;
                          return std::string("every shim-loaded process");
                        },
                        [](const TrafficSetTarget& t) {
                          if (t.part == TrafficPart::kSink) {
                            return "traffic sink " + joinedInterfaces(t.sinks);
                          }
                          std::string out =
                              "traffic from " + joinedInterfaces(t.sources) + " to " +
                              (t.part == TrafficPart::kSources
                                   ? t.sink_address + " (" + joinedInterfaces(t.sinks) + ")"
                                   : joinedInterfaces(t.sinks));
                          for (size_t i = 0; i < t.paths.size(); ++i) {
                            out += (i == 0 ? " via " : " or ") + describe(Target(t.paths[i].port));
                          }
                          return out;
                        },
                    },
                    target);
}

std::vector<std::string> lockKeys(const Target& target) {
  return std::visit(
      Overloaded{
          [](const InterfaceTarget& t) { return std::vector<std::string>{interfaceKey(t)}; },
          [](const RdmaPortTarget& t) {
            return std::vector<std::string>{"rdma/" + t.device + "/" + std::to_string(t.port)};
          },
          [](const SubnetManagerTarget& t) {
            return std::vector<std::string>{(t.port_guid.empty()
                                                 ? "sm/node/" + t.node
                                                 : "sm/guid/" + canonicalGuid(t.port_guid)) +
                                            (t.netns.empty() ? "" : "/" + t.netns)};
          },
          [](const IbPortTarget& t) {
            return std::vector<std::string>{"ib/" + t.netns + "/" + t.node + "/" +
                                            std::to_string(t.port)};
          },
          [](const ProcessTarget& t) {
            // Keys are compared for equality, not as patterns, so an every-process target can
            // only collide with the others if they all hold one key in common: "process/*".
            // That also serialises a pid target with a rank or name target, which is right:
            // before capture nobody knows whether rank 3 is pid 1234 or is named ib_write_bw,
            // and a verbs shim holds one set of armed faults per process, which each arm
            // replaces and each revert disarms. The cost: two process faults on one host never
            // overlap, not even on two ranks.
            std::vector<std::string> keys;
            if (t.pid) keys.push_back("process/pid/" + std::to_string(*t.pid));
            if (t.rank) keys.push_back("process/rank/" + std::to_string(*t.rank));
            if (!t.name.empty()) keys.push_back("process/name/" + t.name);
            keys.push_back(kEveryProcessKey);
            return keys;
          },
          [](const TrafficSetTarget& t) {
            // An interface that is both a source and a sink is held once.
            std::vector<std::string> keys;
            for (const InterfaceTarget& endpoint : localEndpoints(t)) {
              std::string key = interfaceKey(endpoint);
              if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
                keys.push_back(std::move(key));
              }
            }
            return keys;
          },
      },
      target);
}

std::string_view trafficPartName(TrafficPart part) {
  switch (part) {
    case TrafficPart::kWhole:
      return "whole";
    case TrafficPart::kSink:
      return "sink";
    case TrafficPart::kSources:
      return "sources";
  }
  return "whole";
}

std::vector<InterfaceTarget> localEndpoints(const TrafficSetTarget& set) {
  switch (set.part) {
    case TrafficPart::kSink:
      return set.sinks;
    case TrafficPart::kSources:
      return set.sources;
    case TrafficPart::kWhole:
      break;
  }
  std::vector<InterfaceTarget> out = set.sources;
  out.insert(out.end(), set.sinks.begin(), set.sinks.end());
  return out;
}

bool isEveryProcess(const ProcessTarget& target) {
  return !target.pid && !target.rank && target.name.empty();
}

const InterfaceTarget* interfaceOf(const Target& target) {
  return std::get_if<InterfaceTarget>(&target);
}

core::Result<InterfaceTarget> requireInterface(std::string_view kind, const Target& target) {
  if (const InterfaceTarget* interface = interfaceOf(target)) return *interface;
  const TargetType type = typeOf(target);
  const char* article = type == TargetType::kRdmaPort || type == TargetType::kIbPort ? "an" : "a";
  return core::Status(
      core::StatusCode::kInvalidArgument,
      std::string(kind) + " acts on an interface, not on " + article + " " + toString(type));
}

}  // namespace fabric_chaos::injectors
