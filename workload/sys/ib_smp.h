#pragma once
// Subnet management packets by direct route, the reads `ibnetdiscover` and `ibroute` make: a
// node's NodeInfo and NodeDescription, a port's PortInfo, a switch's linear forwarding table.
// A direct route names the output port at each hop from the local port ({} is the local node,
// {1} the node cabled to local port 1), so it reaches a switch whatever its forwarding tables
// say. The IB probe discovers the subnet and reads its routes through it (workload/ib_routes.h);
// the libibmad implementation is in workload/sys/ib_management.cc. Every call waits at most
// timeout_ms for its answer; none is kTimeout.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::workload {

using DirectRoute = std::vector<int>;

struct SmpNodeInfo {
  bool is_switch = false;
  int ports = 0;
  uint64_t node_guid = 0;
  uint64_t port_guid = 0;
  int local_port = 0;  // the port the query entered the node by
};

// PortInfo.PortState (IBA 14.2.5.6).
enum class IbPortState { kNoChange = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4 };

// PortInfo.PortPhysicalState (IBA 14.2.5.6): what `ibportstate` calls LinkUp, Disabled, ...
enum class IbPhysicalState {
  kNoChange = 0,
  kSleep = 1,
  kPolling = 2,
  kDisabled = 3,
  kTraining = 4,
  kLinkUp = 5,
  kErrorRecovery = 6,
  kPhyTest = 7,
};
// "link-up", "disabled", "polling", ...
inline const char* describe(IbPhysicalState state) {
  switch (state) {
    case IbPhysicalState::kNoChange:
      return "no-change";
    case IbPhysicalState::kSleep:
      return "sleep";
    case IbPhysicalState::kPolling:
      return "polling";
    case IbPhysicalState::kDisabled:
      return "disabled";
    case IbPhysicalState::kTraining:
      return "training";
    case IbPhysicalState::kLinkUp:
      return "link-up";
    case IbPhysicalState::kErrorRecovery:
      return "error-recovery";
    case IbPhysicalState::kPhyTest:
      return "phy-test";
  }
  return "unknown";
}

struct SmpPortInfo {
  uint16_t lid = 0;
  IbPortState state = IbPortState::kDown;
  IbPhysicalState physical = IbPhysicalState::kLinkUp;
};

using LftBlock = std::array<uint8_t, 64>;  // output ports of LIDs 64*block .. 64*block+63

class SmpReader {
 public:
  virtual ~SmpReader() = default;
  virtual core::Result<SmpNodeInfo> nodeInfo(const DirectRoute& route, int timeout_ms) = 0;
  virtual core::Result<std::string> nodeDescription(const DirectRoute& route, int timeout_ms) = 0;
  virtual core::Result<SmpPortInfo> portInfo(const DirectRoute& route, int port,
                                             int timeout_ms) = 0;
  virtual core::Result<LftBlock> lftBlock(const DirectRoute& route, int block, int timeout_ms) = 0;
};

// The one write: a port's physical state, as `ibportstate <lid> <port> disable|enable` sets it
// (a PortInfo Get, PortPhysicalState changed to Disabled or Polling and every other settable
// field left as "no change", a PortInfo Set). Disabled takes the link down on both ends; Polling
// lets it train again.
class SmpPortControl {
 public:
  virtual ~SmpPortControl() = default;
  virtual core::Status setPhysicalState(const DirectRoute& route, int port, IbPhysicalState state,
                                        int timeout_ms) = 0;
};

}  // namespace fabric_chaos::workload
