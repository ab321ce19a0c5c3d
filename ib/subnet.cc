#include "ib/subnet.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace fabric_chaos::ib {
namespace {

std::string guidText(uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(guid));
  return text;
}

nlohmann::json optionalLid(const std::optional<uint16_t>& lid) {
  return lid ? nlohmann::json(*lid) : nlohmann::json(nullptr);
}

}  // namespace

const char* describe(IbNodeType type) {
  switch (type) {
    case IbNodeType::kSwitch:
      return "switch";
    case IbNodeType::kChannelAdapter:
      return "ca";
    case IbNodeType::kRouter:
      return "router";
  }
  return "unknown";
}

const char* describe(IbRole role) {
  switch (role) {
    case IbRole::kLeaf:
      return "leaf";
    case IbRole::kSpine:
      return "spine";
    case IbRole::kHca:
      return "hca";
    case IbRole::kOther:
      return "other";
  }
  return "unknown";
}

void inferRoles(IbSubnet& subnet) {
  std::map<uint64_t, IbNodeType> types;
  for (const IbNode& node : subnet.nodes) types[node.guid] = node.type;
  std::map<uint64_t, bool> has_ca_neighbour;
  std::map<uint64_t, bool> has_switch_neighbour;
  for (const IbLink& link : subnet.links) {
    for (const auto& [self, other] : {std::pair{link.a, link.b}, std::pair{link.b, link.a}}) {
      const auto type = types.find(other.node_guid);
      if (type == types.end()) continue;
      if (type->second == IbNodeType::kChannelAdapter) has_ca_neighbour[self.node_guid] = true;
      if (type->second == IbNodeType::kSwitch) has_switch_neighbour[self.node_guid] = true;
    }
  }
  for (IbNode& node : subnet.nodes) {
    switch (node.type) {
      case IbNodeType::kChannelAdapter:
        node.role = IbRole::kHca;
        break;
      case IbNodeType::kSwitch:
        node.role = has_ca_neighbour[node.guid]       ? IbRole::kLeaf
                    : has_switch_neighbour[node.guid] ? IbRole::kSpine
                                                      : IbRole::kOther;
        break;
      case IbNodeType::kRouter:
        node.role = IbRole::kOther;
        break;
    }
  }
}

const IbNode* findNode(const IbSubnet& subnet, uint64_t guid) {
  for (const IbNode& node : subnet.nodes) {
    if (node.guid == guid) return &node;
  }
  return nullptr;
}

const IbNode* findNodeByDescription(const IbSubnet& subnet, const std::string& description) {
  for (const IbNode& node : subnet.nodes) {
    if (node.description == description) return &node;
  }
  return nullptr;
}

nlohmann::json toJson(const IbSubnet& subnet) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const IbNode& node : subnet.nodes) {
    nodes.push_back({{"type", describe(node.type)},
                     {"guid", guidText(node.guid)},
                     {"description", node.description},
                     {"ports", node.ports},
                     {"lid", optionalLid(node.lid)},
                     {"role", describe(node.role)}});
  }
  auto end = [&](const IbEnd& e) {
    const IbNode* node = findNode(subnet, e.node_guid);
    return nlohmann::json{
        {"guid", guidText(e.node_guid)},
        {"description", node == nullptr ? "" : node->description},
        {"port", e.port},
        {"port_guid", e.port_guid ? nlohmann::json(guidText(*e.port_guid)) : nullptr},
        {"lid", optionalLid(e.lid)}};
  };
  nlohmann::json links = nlohmann::json::array();
  for (const IbLink& link : subnet.links) {
    links.push_back({{"a", end(link.a)}, {"b", end(link.b)}, {"rate", link.rate}});
  }
  return {{"nodes", nodes}, {"links", links}};
}

}  // namespace fabric_chaos::ib
