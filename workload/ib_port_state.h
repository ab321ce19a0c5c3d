#pragma once
// One switch port's physical state read or set from this node, by direct route, the way
// `ibportstate <lid> <port> query|disable|enable` does it: the subnet is discovered from the
// local port (workload/ib_routes.h), the switch found by its node description, and the PortInfo
// Set sent over the first of its direct routes that answers, so that it works whatever the
// switches' forwarding tables say and while a cable is down. A node that names a channel adapter
// means the switch port at the other end of its cable. `fabric-chaos ib-port` runs it; the
// ib_link_down and ib_link_flap kinds use that command on real subnets. Not thread-safe.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "workload/sys/ib_smp.h"

namespace fabric_chaos::workload {

enum class IbPortAction { kQuery, kDisable, kEnable };

struct IbPortOutcome {
  std::string switch_name;  // the switch whose port was read or set
  uint64_t switch_guid = 0;
  int port = 0;
  DirectRoute route;  // the direct route that answered
  IbPhysicalState before = IbPhysicalState::kNoChange;
  IbPhysicalState after = IbPhysicalState::kNoChange;  // read back after a Set
};

// kNotFound when no switch or channel adapter of that name answered the discovery (a channel
// adapter whose cable is down does not); kFailedPrecondition when disabling this node's own cable
// (nothing could enable it again from here); kTimeout when no route to the switch answers.
core::Result<IbPortOutcome> actOnPort(SmpReader& smp, SmpPortControl& control,
                                      const std::string& node, int port, IbPortAction action,
                                      int timeout_ms);

// {"switch", "guid": "0x...", "port", "route": "0,1,3", "before": "link-up", "after": "disabled"}
nlohmann::json toJson(const IbPortOutcome& outcome);

}  // namespace fabric_chaos::workload
