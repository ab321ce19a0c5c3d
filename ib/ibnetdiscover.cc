#include "ib/ibnetdiscover.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <tuple>

namespace fabric_chaos::ib {
namespace {

using core::Status;
using core::StatusCode;

std::optional<uint64_t> hexNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(text, &used, 16);
    if (used != text.size()) return std::nullopt;
    return value;
  } catch (...) {
    return std::nullopt;
  }
}

// A port line as written, before remote ids are resolved to GUIDs.
struct RawPort {
  size_t line = 0;
  uint64_t node_guid = 0;
  int port = 0;
  std::optional<uint64_t> port_guid;
  std::string remote_id;
  int remote_port = 0;
  std::optional<uint64_t> remote_port_guid;
  std::optional<uint16_t> lid;         // this end's (a channel adapter port's)
  std::optional<uint16_t> remote_lid;  // the other end's
  std::string rate;
};

Status lineError(size_t line, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "line " + std::to_string(line) + ": " + what);
}

// Decimal digits (the regexes matched \d+) up to `max`; nullopt past it.
std::optional<int64_t> decimal(const std::string& digits, int64_t max) {
  int64_t value = 0;
  for (char c : digits) {
    value = value * 10 + (c - '0');
    if (value > max) return std::nullopt;
  }
  return value;
}

// A LID (16 bits) from a regex group; nullopt when the group did not match or is out of range.
std::optional<uint16_t> lidAt(const std::smatch& m, size_t i) {
  if (!m[i].matched) return std::nullopt;
  const auto value = decimal(m[i].str(), 0xffff);
  if (!value) return std::nullopt;
  return static_cast<uint16_t>(*value);
}

// Text that goes into the subnet's JSON must be UTF-8, and a node description is 64 bytes of
// whatever its node says: bytes that do not form UTF-8 become '?'.
std::string utf8OrReplaced(std::string text) {
  try {
    (void)nlohmann::json(text).dump();
    return text;
  } catch (const nlohmann::json::exception&) {
    for (char& c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
    }
    return text;
  }
}

// Port numbers and port counts: a switch has at most 255 ports (254 plus port 0).
constexpr int64_t kMaxPort = 255;
constexpr size_t kMaxLine = 4096;

// The comment of a port line. A switch's: `"remote description" lid R RATE`; a channel
// adapter's: `lid L lmc M "remote description" lid R RATE`.
void readPortComment(const std::string& comment, RawPort& port) {
  static const std::regex own(R"(^\s*lid (\d+) lmc \d+)");
  static const std::regex remote(R"re("[^"]*"\s+lid (\d+)\s+(\S+))re");
  std::smatch m;
  if (std::regex_search(comment, m, own)) port.lid = lidAt(m, 1);
  if (std::regex_search(comment, m, remote)) {
    port.remote_lid = lidAt(m, 1);
    port.rate = utf8OrReplaced(m[2].str());
  }
}

}  // namespace

core::Result<IbSubnet> parseIbnetdiscover(const std::string& text) {
  static const std::regex guid_line(R"(^(switchguid|caguid|rtguid)=0x([0-9a-fA-F]+))");
  static const std::regex node_line(R"re(^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*(?:#(.*))?$)re");
  static const std::regex port_line(
      R"re(^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*"([^"]+)"\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*(?:#(.*))?$)re");
  static const std::regex description(R"re(^\s*"([^"]*)")re");
  static const std::regex base_lid(R"(base port \d+ lid (\d+))");

  IbSubnet subnet;
  std::map<std::string, uint64_t> guid_of_id;
  std::vector<RawPort> ports;
  std::optional<uint64_t> pending_guid;
  std::optional<size_t> current;  // index into subnet.nodes
  std::istringstream in(text);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // libstdc++'s regex recurses per character: a line far longer than any ibnetdiscover writes
    // (under 200 characters) is refused before it meets one.
    if (line.size() > kMaxLine) {
      return lineError(number, "longer than " + std::to_string(kMaxLine) + " characters");
    }
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    std::smatch m;
    if (std::regex_search(line, m, guid_line)) {
      pending_guid = hexNumber(m[2].str());
      continue;
    }
    if (line.rfind("Switch", 0) == 0 || line.rfind("Ca", 0) == 0 || line.rfind("Rt", 0) == 0) {
      if (!std::regex_match(line, m, node_line)) return lineError(number, "unreadable node line");
      IbNode node;
      const std::string kind = m[1].str();
      node.type = kind == "Switch" ? IbNodeType::kSwitch
                  : kind == "Ca"   ? IbNodeType::kChannelAdapter
                                   : IbNodeType::kRouter;
      const auto ports = decimal(m[2].str(), kMaxPort);
      if (!ports) return lineError(number, "a port count above " + std::to_string(kMaxPort));
      node.ports = static_cast<int>(*ports);
      node.id = m[3].str();
      const std::string comment = m[4].str();
      std::smatch d;
      if (std::regex_search(comment, d, description)) node.description = utf8OrReplaced(d[1].str());
      if (std::regex_search(comment, d, base_lid)) node.lid = lidAt(d, 1);
      // The GUID line comes first; without one, the id's hex part ("S-0000000000200001").
      std::optional<uint64_t> guid = pending_guid;
      if (!guid && node.id.size() > 2 && node.id[1] == '-') guid = hexNumber(node.id.substr(2));
      if (!guid) return lineError(number, "node \"" + node.id + "\" has no GUID");
      node.guid = *guid;
      pending_guid.reset();
      if (guid_of_id.count(node.id) != 0) {
        return lineError(number, "node \"" + node.id + "\" is defined twice");
      }
      guid_of_id[node.id] = node.guid;
      subnet.nodes.push_back(std::move(node));
      current = subnet.nodes.size() - 1;
      continue;
    }
    if (line[0] == '[') {
      if (!std::regex_match(line, m, port_line)) return lineError(number, "unreadable port line");
      if (!current) return lineError(number, "a port line before any node line");
      RawPort port;
      port.line = number;
      port.node_guid = subnet.nodes[*current].guid;
      const auto local = decimal(m[1].str(), kMaxPort);
      const auto remote_port = decimal(m[4].str(), kMaxPort);
      if (!local || !remote_port) {
        return lineError(number, "a port number above " + std::to_string(kMaxPort));
      }
      port.port = static_cast<int>(*local);
      if (m[2].matched) port.port_guid = hexNumber(m[2].str());
      port.remote_id = m[3].str();
      port.remote_port = static_cast<int>(*remote_port);
      if (m[5].matched) port.remote_port_guid = hexNumber(m[5].str());
      readPortComment(m[6].str(), port);
      ports.push_back(std::move(port));
      continue;
    }
    // vendid=, devid=, sysimgguid= and anything else: not part of the description.
  }

  // Each cable once, keyed by its lower end; what either side says of an end is kept.
  using EndKey = std::pair<uint64_t, int>;
  std::map<std::pair<EndKey, EndKey>, IbLink> links;
  for (const RawPort& port : ports) {
    auto remote = guid_of_id.find(port.remote_id);
    if (remote == guid_of_id.end()) {
      return lineError(port.line, "a link to node \"" + port.remote_id + "\", which is not listed");
    }
    IbEnd self{port.node_guid, port.port, port.port_guid, port.lid};
    IbEnd other{remote->second, port.remote_port, port.remote_port_guid, port.remote_lid};
    const bool swapped =
        std::make_pair(other.node_guid, other.port) < std::make_pair(self.node_guid, self.port);
    if (swapped) std::swap(self, other);
    const auto key =
        std::make_pair(EndKey{self.node_guid, self.port}, EndKey{other.node_guid, other.port});
    auto [it, inserted] = links.try_emplace(key, IbLink{self, other, port.rate});
    if (inserted) continue;
    IbLink& link = it->second;
    for (auto [known, seen] : {std::pair{&link.a, &self}, std::pair{&link.b, &other}}) {
      if (!known->port_guid) known->port_guid = seen->port_guid;
      if (!known->lid) known->lid = seen->lid;
    }
    if (link.rate.empty()) link.rate = port.rate;
  }
  for (auto& [key, link] : links) subnet.links.push_back(std::move(link));
  std::stable_sort(subnet.nodes.begin(), subnet.nodes.end(), [](const IbNode& a, const IbNode& b) {
    return std::make_tuple(a.type != IbNodeType::kSwitch, a.guid) <
           std::make_tuple(b.type != IbNodeType::kSwitch, b.guid);
  });
  inferRoles(subnet);
  return subnet;
}

}  // namespace fabric_chaos::ib
