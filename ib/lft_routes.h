#pragma once
// Whether an InfiniBand subnet's switches forward every channel-adapter pair's packets to their
// destination, read the way `ibroute` and `ibtracert` read it: from each switch's linear
// forwarding table (LFT: destination LID -> output port) and the state of the ports it points
// at, walked hop by hop over the cables found when the subnet was discovered. A pair is routable
// when the walk from the source's switch reaches the destination's port over active ports,
// without a loop and without an unassigned entry. Also: how many LFT entries differ between two
// readings, the figure that says how much of the subnet a re-route rewrote. Pure.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::ib {

// What is cabled to a switch port, as discovered.
struct RouteNeighbor {
  uint64_t guid = 0;  // node GUID
  int port = 0;       // the neighbour's port at the other end
  bool is_switch = false;
};

struct RouteSwitch {
  uint64_t guid = 0;
  std::string name;                       // its node description: "l0"
  uint16_t lid = 0;                       // its management port's LID
  std::map<int, RouteNeighbor> cabled;    // port -> what is on the other end
  std::vector<std::vector<int>> drpaths;  // direct routes from the observer, shortest first
};

struct RouteCa {
  uint64_t guid = 0;  // node GUID
  std::string name;
  uint16_t lid = 0;          // its port's LID (LMC 0)
  uint64_t switch_guid = 0;  // where its port is cabled
  int switch_port = 0;
};

// The subnet as discovered once: switches, the channel adapters' ports, and the highest LID any
// node had (LFT blocks past it are not read).
struct RouteMap {
  std::vector<RouteSwitch> switches;
  std::vector<RouteCa> cas;
  uint16_t top_lid = 0;
  const RouteSwitch* findSwitch(uint64_t guid) const;
};

// LFT port values with a meaning of their own (IBA 14.2.5.10).
inline constexpr uint8_t kLftManagementPort = 0;
inline constexpr uint8_t kLftUnassigned = 255;

// One reading of every switch: its LFT for LIDs 0..top_lid and which cabled ports are active.
// A switch missing here could not be read (no answer on any of its direct routes).
struct SwitchReading {
  std::vector<uint8_t> lft;         // index: destination LID
  std::map<int, bool> port_active;  // cabled port -> PortState is Active
};
using RouteReading = std::map<uint64_t, SwitchReading>;  // by switch GUID

struct RouteVerdict {
  int pairs = 0;              // ordered channel-adapter pairs checked
  int unroutable = 0;         // of which the walk does not arrive
  int unknown = 0;            // of which the walk met a switch that could not be read
  std::string first_problem;  // "h0 -> h2: l0 sends LID 7 out of port 3, which is not active"
};

RouteVerdict checkRoutes(const RouteMap& map, const RouteReading& reading);

struct LftDifference {
  int changed = 0;   // entries whose output port differs
  int compared = 0;  // entries read in both readings: every switch's entry for every node's LID
};

LftDifference lftDifference(const RouteMap& map, const RouteReading& before,
                            const RouteReading& after);

}  // namespace fabric_chaos::ib
