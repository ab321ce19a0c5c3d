#pragma once
// The rdma_cm plumbing both verbs transports use (the ring, workload/sys/verbs_ring.h, and the
// traffic generator, workload/sys/verbs_traffic.h): finding out early that a host has no RDMA
// device, a non-blocking event channel, and events copied out and acknowledged at once so that
// their ids can be destroyed freely. Stateless; any thread.

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::workload::verbs {

// kNotFound "no RDMA device: ..." with a hint on how to add one when libibverbs lists none;
// otherwise librdmacm would report ENODEV from whichever call comes first.
core::Status checkRdmaDevicePresent();

// An event channel whose fd never blocks; kNotFound (as above) when the host has no device.
core::Result<rdma_event_channel*> createEventChannel();

bool setNonBlocking(int fd);

// A listening RDMA_PS_TCP id on addr:port (numeric; port 0: the CM picks one) with `backlog`
// pending requests. kNotFound "no RDMA device carries ADDR" when no device has that address.
core::Result<rdma_cm_id*> listenOn(rdma_event_channel* channel, const std::string& addr, int port,
                                   int backlog);

// What we keep of a CM event.
struct CmEvent {
  rdma_cm_event_type type = RDMA_CM_EVENT_ADDR_RESOLVED;
  rdma_cm_id* id = nullptr;
  rdma_cm_id* listen_id = nullptr;
  int status = 0;
  std::vector<uint8_t> private_data;
};

// Reads one event from a non-blocking channel: 1 read, 0 none queued, -errno on failure.
int nextCmEvent(rdma_event_channel* channel, CmEvent* out);

// "RDMA_CM_EVENT_REJECTED (status 28)" for messages.
std::string cmEventText(const CmEvent& e);

}  // namespace fabric_chaos::workload::verbs
