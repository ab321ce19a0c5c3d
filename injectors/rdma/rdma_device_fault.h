#pragma once
// rdma_port_down, rdma_gid_change, rdma_device_remove and rdma_mtu_change
// (injectors/model/rdma_device_specs.h): faults any verbs program sees through the kernel, on
// one port of an RDMA device of this host.
// - port_down takes the port's netdev administratively down (the kernel's RoCE code reports
//   IBV_EVENT_PORT_ERR); a port without a netdev (native InfiniBand) is ib_link_down's.
// - gid_change removes the address behind the GID at the target's gid_index.
// - device_remove removes the device (RDMA_NLDEV_CMD_DELLINK) and re-creates it on its netdev
//   (RDMA_NLDEV_CMD_NEWLINK): only software devices (rxe, siw) can be re-created so, and only
//   when no program holds them open (see the .cc).
// - mtu_change sets the netdev's MTU.
// capture() records exactly what revert() needs, including the addresses and routes the kernel
// drops along with an address or a link (injectors/rdma/ip_snapshot.h). Called from the engine's
// run thread. The one state between calls: the address gid_change's capture() found behind the
// GID, so that apply() removes that address even when the kernel has since put another one
// (an IPv6 SLAAC address, say) into the emptied GID entry.

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "injectors/injector.h"
#include "injectors/model/rdma_device_specs.h"
#include "injectors/sys/ip_config.h"

namespace fabric_chaos::sys {
class LinkControl;
class RdmaDeviceControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class RdmaDeviceFault : public Injector {
 public:
  // The adapters must outlive the injector; a null one leaves the kind unavailable.
  RdmaDeviceFault(RdmaDeviceFaultKind kind, sys::RdmaDeviceControl* devices,
                  sys::LinkControl* links, sys::IpConfig* ip)
      : kind_(kind), devices_(devices), links_(links), ip_(ip) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // port_down: {"netdev", "was_up", "ip"}; gid_change: {"netdev", "address", "ip"} ("ip": the
  // netdev's addresses and routes); device_remove: {"device", "link_type", "netdev"};
  // mtu_change: {"netdev", "mtu"}.
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  // Puts back what capture() recorded and the fault took; what is already back stays as it is.
  core::Status revert(const Fault& fault, const json& prior) override;
  // port_down: the netdev's and the port's state; gid_change: the GID's address now ("" when
  // its entry is empty); device_remove: whether the device exists; mtu_change: the MTU.
  core::Result<json> observe(const Fault& fault) override;

 private:
  core::Result<RdmaPortTarget> portOf(const Fault& fault) const;
  core::Status adaptersPresent() const;
  // The port's netdev; kNotSupported, with what to use instead, for a port without one.
  core::Result<std::string> netdevOf(const RdmaPortTarget& port);
  // The address on `netdev` behind the GID rdma_gid_change's params name: the target's
  // gid_index (kFailedPrecondition for a GID no address is behind, the port's default GID among
  // them), or with "gid": "ipv4" the netdev's primary IPv4 address (kNotFound without one).
  core::Result<sys::IpAddress> addressBehindGid(const RdmaPortTarget& port,
                                                const std::string& netdev, const json& params);
  // What gid_change's capture() recorded for this fault in this process, if anything.
  std::optional<sys::IpAddress> capturedGidAddress(const Fault& fault);
  // Why the device cannot be removed and re-created now, or its link type.
  core::Result<std::string> removableLinkType(const RdmaPortTarget& port);

  core::Result<json> capturePortDown(const RdmaPortTarget& port);
  core::Result<json> captureGidChange(const RdmaPortTarget& port, const json& params);
  core::Result<json> captureDeviceRemove(const RdmaPortTarget& port);
  core::Result<json> captureMtuChange(const RdmaPortTarget& port);
  core::Status revertPortDown(const json& prior);
  core::Status revertGidChange(const json& prior);
  core::Status revertDeviceRemove(const json& prior);
  core::Status revertMtuChange(const json& prior);

  RdmaDeviceFaultKind kind_;
  sys::RdmaDeviceControl* devices_;
  sys::LinkControl* links_;
  sys::IpConfig* ip_;
  std::mutex captured_mutex_;
  // faultKey() -> the address gid_change's capture() found behind the GID; gone at revert().
  std::map<std::string, sys::IpAddress> captured_gid_addresses_;
};

}  // namespace fabric_chaos::injectors
