#pragma once
// An InfiniBand subnet as fabric-chaos describes it (docs/ib.md): its nodes (switches and channel
// adapters, with GUIDs, LIDs and their fabric role) and the links between their ports. Built from
// `ibnetdiscover` output (ib/ibnetdiscover.h), on a real subnet as on the simulated lab's, so that
// selectors can name "a spine", "the link between leaf l1 and spine s0". Pure.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::ib {

enum class IbNodeType { kSwitch, kChannelAdapter, kRouter };

// Where a node sits in a two-tier fat tree: a leaf has a channel adapter behind at least one of
// its ports, a spine only switches; a channel adapter is an HCA.
enum class IbRole { kLeaf, kSpine, kHca, kOther };

struct IbNode {
  IbNodeType type = IbNodeType::kSwitch;
  uint64_t guid = 0;        // node GUID (switchguid / caguid)
  std::string id;           // ibnetdiscover's node id: "S-0000000000200001", "H-..."
  std::string description;  // the node description: "l0", "mlx5_0 host-17"
  int ports = 0;            // physical ports
  // A switch's base LID (its management port 0); a channel adapter's LIDs are per port.
  std::optional<uint16_t> lid;
  IbRole role = IbRole::kOther;
};

struct IbEnd {
  uint64_t node_guid = 0;
  int port = 0;
  std::optional<uint64_t> port_guid;  // channel adapter ports have their own GUID
  std::optional<uint16_t> lid;        // a channel adapter port's LID
  bool operator==(const IbEnd&) const = default;
};

// One cable. `a` is the end with the lower (node GUID, port).
struct IbLink {
  IbEnd a;
  IbEnd b;
  std::string rate;  // as ibnetdiscover prints it: "4xSDR", "4xHDR"
};

struct IbSubnet {
  std::vector<IbNode> nodes;  // switches first, then channel adapters, each by GUID
  std::vector<IbLink> links;  // by a's (node GUID, port)
};

const char* describe(IbNodeType type);  // "switch", "ca", "router"
const char* describe(IbRole role);      // "leaf", "spine", "hca", "other"

// Sets each node's role from its links (see IbRole).
void inferRoles(IbSubnet& subnet);

const IbNode* findNode(const IbSubnet& subnet, uint64_t guid);
const IbNode* findNodeByDescription(const IbSubnet& subnet, const std::string& description);

// {"nodes": [{"type", "guid": "0x...", "description", "ports", "lid", "role"}],
//  "links": [{"a": {"guid", "description", "port", "port_guid", "lid"}, "b": {...}, "rate"}]}
nlohmann::json toJson(const IbSubnet& subnet);

}  // namespace fabric_chaos::ib
