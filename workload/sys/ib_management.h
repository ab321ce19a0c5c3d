#pragma once
// The IB probe's management datagrams, through rdma-core's libibmad: the local port's LID, GUID
// and master SM LID (its PortInfo), SMInfo from an SM, and SA PathRecord queries to a peer port.
// A MAD that gets no answer within timeout_ms x retries is kTimeout. In the IB lab the probe runs
// with umad2sim preloaded (SIM_HOST names its node), which carries these to ibsim; on a real host
// they go through /dev/infiniband/umad*. Not thread-safe: one probe thread per object.

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "ib/sminfo.h"
#include "workload/sys/ib_smp.h"

namespace fabric_chaos::workload {

struct LocalIbPort {
  uint16_t lid = 0;
  uint16_t sm_lid = 0;  // the master SM the port was last told of (PortInfo.MasterSMLID)
  uint64_t port_guid = 0;
};

class IbManagement {
 public:
  virtual ~IbManagement() = default;
  virtual core::Result<LocalIbPort> localPort() = 0;
  virtual core::Result<ib::SmInfoReply> smInfo(uint16_t lid) = 0;
  // The DLID the SA at `sa_lid` answers for a path from the local port to `dest_port_guid`.
  virtual core::Result<uint16_t> pathRecord(uint16_t sa_lid, uint64_t dest_port_guid) = 0;
};

// Both over one UMAD port: umad2sim answers only the last registration a process makes, so the
// probe's SA rounds and its route reads must share one.
class IbPort : public IbManagement, public SmpReader, public SmpPortControl {};

// Opens UMAD port `port` of CA `ca` ("" = the first) for SMP and SA queries. kUnavailable naming
// the CA when there is none (no IB stack, or umad2sim without its simulator).
core::Result<std::unique_ptr<IbPort>> openIbManagement(const std::string& ca, int port,
                                                       int timeout_ms, int retries);

}  // namespace fabric_chaos::workload
