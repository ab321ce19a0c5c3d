#pragma once
// The RDMA netlink messages (NETLINK_RDMA, client RDMA_NL_NLDEV: <rdma/rdma_netlink.h>,
// drivers/infiniband/core/nldev.c) the RDMA device faults send and the replies they read, as
// bytes: the device dump, one port, a device's uverbs driver, its resource counts, and the
// DELLINK / NEWLINK pair that removes and re-creates a software device. Pure functions, no
// sockets, so the wire format is tested byte for byte without an RDMA device;
// injectors/sys/rdma_device_control.cc sends them. Decoders take untrusted bytes: malformed or
// truncated input is kInvalidArgument, never a read outside the span. Thread-safe (no state).

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

// Complete requests with nlmsg_pid 0. The RDMA netlink messages have no family header: the
// attributes follow the netlink header.
//
// RDMA_NLDEV_CMD_GET with NLM_F_DUMP: one reply per device (index and name among its attributes),
// then NLMSG_DONE.
std::vector<uint8_t> encodeRdmaDeviceDumpRequest(uint32_t seq);
// The other requests carry NLM_F_ACK, so that each ends with an ack or an error:
// RDMA_NLDEV_CMD_PORT_GET {DEV_INDEX, PORT_INDEX}: the port's state and netdev.
std::vector<uint8_t> encodeRdmaPortRequest(uint32_t device_index, uint32_t port, uint32_t seq);
// RDMA_NLDEV_CMD_GET_CHARDEV {DEV_INDEX, CHARDEV_TYPE "uverbs"}: among others the driver's
// RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, which says which driver the device belongs to.
std::vector<uint8_t> encodeRdmaUverbsRequest(uint32_t device_index, uint32_t seq);
// RDMA_NLDEV_CMD_RES_GET {DEV_INDEX}: how many of each resource (pd, cq, qp, ctx, ...) exist.
std::vector<uint8_t> encodeRdmaResourceSummaryRequest(uint32_t device_index, uint32_t seq);
// RDMA_NLDEV_CMD_DELLINK {DEV_INDEX}: `rdma link delete`.
std::vector<uint8_t> encodeRdmaDelLinkRequest(uint32_t device_index, uint32_t seq);
// RDMA_NLDEV_CMD_NEWLINK {DEV_NAME, LINK_TYPE, NDEV_NAME}: `rdma link add NAME type TYPE netdev
// NETDEV`. kInvalidArgument for what the kernel would refuse to hold: an empty name, one of 64
// bytes or more or with a '%', a type of 16 bytes or more, an invalid interface name.
core::Result<std::vector<uint8_t>> encodeRdmaNewLinkRequest(const std::string& name,
                                                            const std::string& link_type,
                                                            const std::string& netdev,
                                                            uint32_t seq);

// One RDMA_NL_NLDEV message of a reply: its command and its top-level attributes (the last of
// each type, as the kernel's nla_parse keeps them), payloads copied.
struct RdmaNlReply {
  uint16_t command = 0;  // RDMA_NL_GET_OP of the message type
  std::map<uint16_t, std::vector<uint8_t>> attributes;
};

// Everything the kernel said about one request, gathered datagram by datagram.
struct RdmaNlAnswer {
  std::vector<RdmaNlReply> replies;
  bool complete = false;  // an ack, NLMSG_DONE or an error ended it
  int error = 0;          // the positive errno of an NLMSG_ERROR; 0 otherwise
  std::string extack;     // with error: the kernel's extended-ack text, when it sent one
};

// Adds what `datagram` says about the request numbered `seq` to `answer`; messages of other
// sequence numbers are skipped. kInvalidArgument when a header or an attribute lies about its
// length, or an error message is cut short.
core::Status collectRdmaNlAnswer(std::span<const uint8_t> datagram, uint32_t seq,
                                 RdmaNlAnswer& answer);

struct RdmaDeviceEntry {
  uint32_t index = 0;
  std::string name;
};

// The numbers are the kernel's (enum ib_port_state, IB physical port states).
struct RdmaPortEntry {
  uint32_t device_index = 0;
  std::string device;
  uint32_t port = 0;
  uint8_t state = 0;           // 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER
  uint8_t physical_state = 0;  // 2 POLLING, 3 DISABLED, 5 LINK_UP, ...
  std::string netdev;          // "" for a port without one (native InfiniBand)
  uint32_t netdev_index = 0;
};

// A device dump's entry: kInvalidArgument without DEV_INDEX and DEV_NAME.
core::Result<RdmaDeviceEntry> decodeRdmaDevice(const RdmaNlReply& reply);
// A PORT_GET reply: kInvalidArgument without the device, port and state attributes.
core::Result<RdmaPortEntry> decodeRdmaPort(const RdmaNlReply& reply);
// A GET_CHARDEV reply's RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID (enum rdma_driver_id); nullopt when the
// driver reports none (ib_device_ops.uverbs_no_driver_id_binding).
core::Result<std::optional<uint32_t>> decodeUverbsDriverId(const RdmaNlReply& reply);
// A RES_GET reply's summary, {"ctx": 1, "pd": 1, "qp": 1, ...}.
core::Result<std::map<std::string, uint64_t>> decodeRdmaResourceSummary(const RdmaNlReply& reply);

// The link type NEWLINK re-creates a device of driver `driver_id` with: "rxe" (RDMA_DRIVER_RXE),
// "siw" (RDMA_DRIVER_SIW); "" for every other driver, whose devices belong to hardware.
std::string rdmaLinkTypeOfDriver(uint32_t driver_id);

// As `rdma link show` prints them: "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"; "NOP" for 0.
std::string ibPortStateName(uint8_t state);
// "SLEEP", "POLLING", "DISABLED", "PORT_CONFIGURATION_TRAINING", "LINK_UP",
// "LINK_ERROR_RECOVERY", "PHY_TEST"; "UNKNOWN" otherwise.
std::string ibPhysicalStateName(uint8_t state);

}  // namespace fabric_chaos::sys
