#pragma once
// Which port a switch forwards a flow out of, answered by the switch's own kernel: an
// RTM_GETROUTE carrying the flow's five-tuple and the interface it arrives on, as
// `ip route get DST from SRC iif IN ipproto tcp sport S dport D` asks. The kernel runs its FIB
// lookup, multipath hashing included, exactly as for a forwarded packet without a precomputed
// hash (the leaf-spine lab clears that hash on its host ports: docs/lab.md, "ECMP hashing"). The
// hot_spot fault chooses its source ports with it. Read-only. Thread-safe: each call uses a
// pooled socket of the namespace.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

// A TCP flow as a switch sees it arrive; the source port varies per question.
struct ArrivingTcpFlows {
  std::string ingress;      // the switch's interface the packets arrive on, e.g. "br0"
  std::string source;       // IPv4, e.g. "10.210.0.1"
  std::string destination;  // IPv4
  int destination_port = 0;
};

class Forwarding {
 public:
  virtual ~Forwarding() = default;
  // For each source port, the interface the switch in netns ("" = the caller's) sends such a
  // flow out of, in order. kNotFound: no such namespace or ingress; kInvalidArgument: an address
  // that is not IPv4 or a port out of 1-65535; kFailedPrecondition naming the flow: the switch
  // has no route for it (it would drop it).
  virtual core::Result<std::vector<std::string>> egressInterfaces(
      const std::string& netns, const ArrivingTcpFlows& flows,
      const std::vector<int>& source_ports) = 0;
};

std::unique_ptr<Forwarding> makeKernelForwarding();

}  // namespace fabric_chaos::sys
