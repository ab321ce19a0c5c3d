#pragma once
// What the RDMA device faults read about one device and port, and the two changes only the RDMA
// netlink API makes: removing a device (RDMA_NLDEV_CMD_DELLINK, `rdma link delete`) and creating
// a software one on a netdev (RDMA_NLDEV_CMD_NEWLINK, `rdma link add`). The port, the driver and
// the open contexts come from RDMA netlink (injectors/sys/rdma_nl_codec.h), the GID table from
// sysfs. Every error names the device and the operation; a device that does not exist is
// kNotFound, a missing capability kPermissionDenied. Thread-safe: each call opens its own
// NETLINK_RDMA socket, in the caller's network namespace (rxe works only in the initial one).

#include <memory>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

// One port as `rdma link show` sees it.
struct RdmaPortLink {
  std::string device;
  int port = 1;
  std::string state;           // "ACTIVE", "DOWN", ... (injectors/sys/rdma_nl_codec.h)
  std::string physical_state;  // "LINK_UP", "DISABLED", ...
  std::string netdev;          // the RoCE or iWARP port's netdev; "" without one (native IB)
};

// The address behind a RoCE GID: an IPv4-mapped GID (::ffff:a.b.c.d) is that IPv4 address, any
// other GID the IPv6 address it spells.
struct RdmaGidAddress {
  int family = 0;       // AF_INET or AF_INET6
  std::string address;  // "10.0.2.15", "fe80::5054:ff:fefc:ff01"
  bool operator==(const RdmaGidAddress&) const = default;
};

class RdmaDeviceControl {
 public:
  virtual ~RdmaDeviceControl() = default;
  virtual core::Result<bool> exists(const std::string& device) = 0;
  // kNotFound for a device or port that does not exist.
  virtual core::Result<RdmaPortLink> port(const std::string& device, int port) = 0;
  // The GID at gid_index (ports/<port>/gids/<gid_index>); kNotFound for an empty entry or one
  // past the table.
  virtual core::Result<RdmaGidAddress> gidAddress(const std::string& device, int port,
                                                  int gid_index) = 0;
  // The link type NEWLINK re-creates the device with, from its driver (the uverbs client's
  // RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID): "rxe", "siw"; "" for a device of any other driver, which
  // belongs to hardware. kNotSupported when the kernel has no uverbs (ib_uverbs not loaded).
  virtual core::Result<std::string> linkType(const std::string& device) = 0;
  // The user verbs contexts open on the device now: programs that have it open.
  virtual core::Result<int> openContexts(const std::string& device) = 0;
  // `rdma link delete`. The kernel unregisters the device before it answers: it waits, and this
  // call with it, until each program with the device open has let it go (see the .cc).
  virtual core::Status removeLink(const std::string& device) = 0;
  // `rdma link add NAME type TYPE netdev NETDEV`: kAlreadyExists when the netdev already has a
  // device of that type, kNotFound when the netdev does not exist.
  virtual core::Status addLink(const std::string& name, const std::string& link_type,
                               const std::string& netdev) = 0;
};

// sys_root is "/sys" on a real host; tests point it at a directory shaped like it.
std::unique_ptr<RdmaDeviceControl> makeNetlinkRdmaDeviceControl(std::string sys_root = "/sys");

// A GID as sysfs prints it ("0000:0000:0000:0000:0000:ffff:0a00:020f") to its address
// ({AF_INET, "10.0.2.15"}); kNotFound for the zero GID (an empty entry), kInvalidArgument for
// text that is not a GID.
core::Result<RdmaGidAddress> gidAddressOf(const std::string& sysfs_gid);

// The default GID the kernel gives a RoCE port whatever its addresses (roce_gid_mgmt.c's
// make_default_gid): fe80::/64 with the EUI-64 of the netdev's MAC ("52:54:00:fc:ff:01" gives
// fe80::5054:ff:fefc:ff01). kInvalidArgument for text that is not a 6-byte MAC.
core::Result<RdmaGidAddress> defaultRoceGidOf(const std::string& mac);

}  // namespace fabric_chaos::sys
