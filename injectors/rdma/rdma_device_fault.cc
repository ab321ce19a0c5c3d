#include "injectors/rdma/rdma_device_fault.h"

#include <linux/if_addr.h>
#include <sys/socket.h>

#include "injectors/rdma/ip_snapshot.h"
#include "injectors/sys/ip_config.h"
#include "injectors/sys/links.h"
#include "injectors/sys/rdma_device_control.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

// Every call acts in the agent's own namespace: an RDMA device and its netdev live there (rxe
// only works in the initial one).
const std::string kHostNamespace;

std::string portName(const RdmaPortTarget& port) {
  return port.device + " port " + std::to_string(port.port);
}

core::Result<std::string> priorString(const json& prior, const char* key) {
  if (!prior.is_object() || !prior.contains(key) || !prior[key].is_string() ||
      prior[key].get<std::string>().empty()) {
    return Status(StatusCode::kInvalidArgument, std::string("prior.") + key + ": required");
  }
  return prior[key].get<std::string>();
}

// A netdev that is gone took the fault with it: nothing is left to restore.
bool gone(const Status& status) { return status.code() == StatusCode::kNotFound; }

// rdma_gid_change's "gid": "ipv4": the GID of the netdev's primary IPv4 address, by address.
bool byPrimaryIpv4(const json& params) {
  return params.is_object() && params.value("gid", "index") == "ipv4";
}

}  // namespace

const KindSpec& RdmaDeviceFault::spec() const { return rdmaDeviceFaultSpec(kind_); }

KindInfo RdmaDeviceFault::info() const {
  KindInfo info{spec().kind, spec().summary, adaptersPresent().isOk(), "", ""};
  if (!info.available) info.reason = adaptersPresent().message();
  switch (kind_) {
    case RdmaDeviceFaultKind::kPortDown:
      info.backend = "rtnetlink (the port's netdev)";
      break;
    case RdmaDeviceFaultKind::kGidChange:
      info.backend = "rtnetlink (the GID's address)";
      break;
    case RdmaDeviceFaultKind::kDeviceRemove:
      info.backend = "RDMA netlink (DELLINK, NEWLINK)";
      break;
    case RdmaDeviceFaultKind::kMtuChange:
      info.backend = "rtnetlink (the netdev's MTU)";
      break;
  }
  return info;
}

Status RdmaDeviceFault::validate(const json& params) const { return checkParams(spec(), params); }

Status RdmaDeviceFault::adaptersPresent() const {
  if (devices_ == nullptr || links_ == nullptr || ip_ == nullptr) {
    return Status(StatusCode::kNotSupported, "no RDMA device, link or address adapter");
  }
  return Status::ok();
}

core::Result<RdmaPortTarget> RdmaDeviceFault::portOf(const Fault& fault) const {
  const RdmaPortTarget* port = std::get_if<RdmaPortTarget>(&fault.target);
  if (port == nullptr) {
    return Status(StatusCode::kInvalidArgument, spec().kind +
                                                    " acts on an rdma_port, not on target type " +
                                                    toString(typeOf(fault.target)));
  }
  if (port->device.empty()) return Status(StatusCode::kInvalidArgument, "target.device: required");
  FC_RETURN_IF_ERROR(adaptersPresent());
  return *port;
}

core::Result<std::string> RdmaDeviceFault::netdevOf(const RdmaPortTarget& port) {
  auto link = devices_->port(port.device, port.port);
  if (!link) return link.status();
  if (!link->netdev.empty()) return link->netdev;
  std::string instead;
  switch (kind_) {
    case RdmaDeviceFaultKind::kPortDown:
      instead = "take an InfiniBand port down with ib_link_down, which disables its switch end";
      break;
    case RdmaDeviceFaultKind::kGidChange:
      instead = "an InfiniBand port's GIDs come from the subnet manager, not from addresses";
      break;
    case RdmaDeviceFaultKind::kDeviceRemove:
      instead = "there is no netdev to re-create the device on";
      break;
    case RdmaDeviceFaultKind::kMtuChange:
      instead = "an InfiniBand port's MTU is the subnet manager's to set";
      break;
  }
  return Status(StatusCode::kNotSupported, spec().kind + ": " + portName(port) +
                                               " has no netdev (native InfiniBand, not RoCE); " +
                                               instead);
}

std::optional<sys::IpAddress> RdmaDeviceFault::capturedGidAddress(const Fault& fault) {
  const std::lock_guard<std::mutex> lock(captured_mutex_);
  auto found = captured_gid_addresses_.find(faultKey(fault));
  if (found == captured_gid_addresses_.end()) return std::nullopt;
  return found->second;
}

core::Result<sys::IpAddress> RdmaDeviceFault::addressBehindGid(const RdmaPortTarget& port,
                                                               const std::string& netdev,
                                                               const json& params) {
  if (byPrimaryIpv4(params)) {
    auto addresses = ip_->addresses(kHostNamespace, netdev);
    if (!addresses) return addresses.status();
    for (const sys::IpAddress& address : *addresses) {
      if (address.family == AF_INET && (address.flags & IFA_F_SECONDARY) == 0) return address;
    }
    return Status(StatusCode::kNotFound,
                  netdev + " has no IPv4 address, so " + portName(port) +
                      " has no IPv4-mapped GID to take away",
                  ENOENT);
  }
  const std::string gid_name = "GID " + std::to_string(port.gid_index) + " of " + portName(port);
  auto gid = devices_->gidAddress(port.device, port.port, port.gid_index);
  if (!gid) return gid.status();
  auto link = links_->getLink(kHostNamespace, netdev);
  if (!link) return link.status();
  // The default GID stays while the port has its netdev: no address is behind it.
  if (auto fallback = sys::defaultRoceGidOf(link->mac); fallback && *fallback == *gid) {
    return Status(StatusCode::kFailedPrecondition,
                  gid_name + " (" + gid->address + ") is the port's default GID, made from " +
                      netdev +
                      "'s MAC address: removing an address does not change it. Choose the "
                      "index of an address-based GID (`ibv_devinfo -v -d " +
                      port.device + "` lists them)");
  }
  auto addresses = ip_->addresses(kHostNamespace, netdev);
  if (!addresses) return addresses.status();
  for (const sys::IpAddress& address : *addresses) {
    if (address.family == gid->family && address.local == gid->address) return address;
  }
  return Status(StatusCode::kFailedPrecondition,
                gid_name + " (" + gid->address + ") is not an address of " + netdev);
}

core::Result<std::string> RdmaDeviceFault::removableLinkType(const RdmaPortTarget& port) {
  auto type = devices_->linkType(port.device);
  if (!type) return type.status();
  if (type->empty()) {
    return Status(StatusCode::kNotSupported,
                  "rdma_device_remove re-creates the device with RDMA_NLDEV_CMD_NEWLINK (`rdma "
                  "link add`), which only software devices (rxe, siw) have; " +
                      port.device +
                      " belongs to hardware, whose re-adding needs a PCI rescan or a driver "
                      "rebind, which this kind does not do");
  }
  // rxe and siw have no disassociate_ucontext: the kernel cannot take the device away from a
  // program, so DELLINK would wait, in uninterruptible sleep inside this agent's sendmsg(),
  // until every program closed it, and none would be told (no IBV_EVENT_DEVICE_FATAL).
  auto contexts = devices_->openContexts(port.device);
  if (!contexts) return contexts.status();
  if (*contexts > 0) {
    return Status(StatusCode::kFailedPrecondition,
                  port.device + " has " + std::to_string(*contexts) +
                      " open verbs context(s): " + *type +
                      " cannot detach programs from a device, so the kernel would hold the "
                      "removal until each of them closed it, and none would get "
                      "IBV_EVENT_DEVICE_FATAL; stop them, or fault them with rdma_port_down");
  }
  return type;
}

core::Result<json> RdmaDeviceFault::capturePortDown(const RdmaPortTarget& port) {
  auto netdev = netdevOf(port);
  if (!netdev) return netdev.status();
  auto link = links_->getLink(kHostNamespace, *netdev);
  if (!link) return link.status();
  auto snapshot = takeIpSnapshot(*ip_, *netdev);
  if (!snapshot) return snapshot.status();
  return json{{"netdev", *netdev}, {"was_up", link->admin_up}, {"ip", toJson(*snapshot)}};
}

core::Result<json> RdmaDeviceFault::captureGidChange(const RdmaPortTarget& port,
                                                     const json& params) {
  auto netdev = netdevOf(port);
  if (!netdev) return netdev.status();
  auto address = addressBehindGid(port, *netdev, params);
  if (!address) return address.status();
  auto snapshot = takeIpSnapshot(*ip_, *netdev);
  if (!snapshot) return snapshot.status();
  return json{{"netdev", *netdev}, {"address", toJson(*address)}, {"ip", toJson(*snapshot)}};
}

core::Result<json> RdmaDeviceFault::captureDeviceRemove(const RdmaPortTarget& port) {
  auto netdev = netdevOf(port);
  if (!netdev) return netdev.status();
  auto type = removableLinkType(port);
  if (!type) return type.status();
  return json{{"device", port.device}, {"link_type", *type}, {"netdev", *netdev}};
}

core::Result<json> RdmaDeviceFault::captureMtuChange(const RdmaPortTarget& port) {
  auto netdev = netdevOf(port);
  if (!netdev) return netdev.status();
  auto link = links_->getLink(kHostNamespace, *netdev);
  if (!link) return link.status();
  return json{{"netdev", *netdev}, {"mtu", link->mtu}};
}

core::Result<json> RdmaDeviceFault::capture(const Fault& fault) {
  auto port = portOf(fault);
  if (!port) return port.status();
  core::Result<json> prior = Status(StatusCode::kInternal, "unknown kind");
  switch (kind_) {
    case RdmaDeviceFaultKind::kPortDown:
      prior = capturePortDown(*port);
      break;
    case RdmaDeviceFaultKind::kGidChange:
      prior = captureGidChange(*port, fault.params);
      if (prior) {
        auto address = ipAddressFromJson((*prior)["address"], "address");
        if (!address) return address.status();
        const std::lock_guard<std::mutex> lock(captured_mutex_);
        captured_gid_addresses_[faultKey(fault)] = *address;
      }
      break;
    case RdmaDeviceFaultKind::kDeviceRemove:
      prior = captureDeviceRemove(*port);
      break;
    case RdmaDeviceFaultKind::kMtuChange:
      prior = captureMtuChange(*port);
      break;
  }
  if (!prior) return prior.status().withContext(spec().kind + " capture");
  return prior;
}

Status RdmaDeviceFault::apply(const Fault& fault) {
  auto port = portOf(fault);
  if (!port) return port.status();
  const std::string what = spec().kind + " on " + portName(*port);
  switch (kind_) {
    case RdmaDeviceFaultKind::kPortDown: {
      auto netdev = netdevOf(*port);
      if (!netdev) return netdev.status().withContext(what);
      return links_->setAdminUp(kHostNamespace, *netdev, false).withContext(what);
    }
    case RdmaDeviceFaultKind::kGidChange: {
      auto netdev = netdevOf(*port);
      if (!netdev) return netdev.status().withContext(what);
      // Without a capture in this process (an agent restarted since): what is there now.
      core::Result<sys::IpAddress> address = Status(StatusCode::kNotFound, "not captured");
      if (auto captured = capturedGidAddress(fault)) {
        address = *captured;
      } else {
        address = addressBehindGid(*port, *netdev, fault.params);
      }
      // An empty entry: the address is already gone (applied twice).
      if (gone(address.status())) return Status::ok();
      if (!address) return address.status().withContext(what);
      const Status removed = ip_->removeAddress(kHostNamespace, *netdev, *address);
      return gone(removed) ? Status::ok() : removed.withContext(what);
    }
    case RdmaDeviceFaultKind::kDeviceRemove: {
      auto exists = devices_->exists(port->device);
      if (!exists) return exists.status().withContext(what);
      if (!*exists) return Status::ok();
      // Checked again right before acting: a program may have opened it since capture.
      auto type = removableLinkType(*port);
      if (!type) return type.status().withContext(what);
      const Status removed = devices_->removeLink(port->device);
      return gone(removed) ? Status::ok() : removed.withContext(what);
    }
    case RdmaDeviceFaultKind::kMtuChange: {
      auto netdev = netdevOf(*port);
      if (!netdev) return netdev.status().withContext(what);
      const auto mtu = fault.params.value("mtu", static_cast<int64_t>(0));
      if (mtu < kMinRdmaMtu || mtu > kMaxRdmaMtu) {
        return Status(StatusCode::kUnprocessable, "mtu: must be an integer in " +
                                                      std::to_string(kMinRdmaMtu) + ".." +
                                                      std::to_string(kMaxRdmaMtu));
      }
      return links_->setMtu(kHostNamespace, *netdev, static_cast<uint32_t>(mtu)).withContext(what);
    }
  }
  return Status(StatusCode::kInternal, "unknown kind");
}

Status RdmaDeviceFault::revertPortDown(const json& prior) {
  auto netdev = priorString(prior, "netdev");
  if (!netdev) return netdev.status();
  if (!prior.value("was_up", true)) return Status::ok();  // down before the fault: left down
  auto snapshot = ipSnapshotFromJson(prior.value("ip", json::object()), "prior.ip");
  if (!snapshot) return snapshot.status();
  const Status up = links_->setAdminUp(kHostNamespace, *netdev, true);
  if (gone(up)) return Status::ok();
  FC_RETURN_IF_ERROR(up.withContext("set " + *netdev + " up"));
  return restoreIpSnapshot(*ip_, *netdev, *snapshot, nullptr);
}

Status RdmaDeviceFault::revertGidChange(const json& prior) {
  auto netdev = priorString(prior, "netdev");
  if (!netdev) return netdev.status();
  auto address = ipAddressFromJson(prior.value("address", json()), "prior.address");
  if (!address) return address.status();
  auto snapshot = ipSnapshotFromJson(prior.value("ip", json::object()), "prior.ip");
  if (!snapshot) return snapshot.status();
  const Status restored = restoreIpSnapshot(*ip_, *netdev, *snapshot, &*address);
  if (gone(restored) && !links_->getLink(kHostNamespace, *netdev)) return Status::ok();
  return restored;
}

Status RdmaDeviceFault::revertDeviceRemove(const json& prior) {
  auto device = priorString(prior, "device");
  if (!device) return device.status();
  auto type = priorString(prior, "link_type");
  if (!type) return type.status();
  auto netdev = priorString(prior, "netdev");
  if (!netdev) return netdev.status();
  auto exists = devices_->exists(*device);
  if (!exists) return exists.status();
  if (*exists) return Status::ok();
  const Status added = devices_->addLink(*device, *type, *netdev);
  if (added.code() == StatusCode::kAlreadyExists) return Status::ok();
  return added;
}

Status RdmaDeviceFault::revertMtuChange(const json& prior) {
  auto netdev = priorString(prior, "netdev");
  if (!netdev) return netdev.status();
  const auto mtu = prior.value("mtu", static_cast<int64_t>(0));
  if (mtu <= 0 || mtu > UINT32_MAX) {
    return Status(StatusCode::kInvalidArgument, "prior.mtu: must be a positive integer");
  }
  const Status set = links_->setMtu(kHostNamespace, *netdev, static_cast<uint32_t>(mtu));
  return gone(set) ? Status::ok() : set;
}

Status RdmaDeviceFault::revert(const Fault& fault, const json& prior) {
  auto port = portOf(fault);
  if (!port) return port.status();
  Status status;
  switch (kind_) {
    case RdmaDeviceFaultKind::kPortDown:
      status = revertPortDown(prior);
      break;
    case RdmaDeviceFaultKind::kGidChange: {
      status = revertGidChange(prior);
      if (status.isOk()) {
        const std::lock_guard<std::mutex> lock(captured_mutex_);
        captured_gid_addresses_.erase(faultKey(fault));
      }
      break;
    }
    case RdmaDeviceFaultKind::kDeviceRemove:
      status = revertDeviceRemove(prior);
      break;
    case RdmaDeviceFaultKind::kMtuChange:
      status = revertMtuChange(prior);
      break;
  }
  return status.withContext(spec().kind + " revert on " + portName(*port));
}

core::Result<json> RdmaDeviceFault::observe(const Fault& fault) {
  auto port = portOf(fault);
  if (!port) return port.status();
  if (kind_ == RdmaDeviceFaultKind::kDeviceRemove) {
    auto exists = devices_->exists(port->device);
    if (!exists) return exists.status();
    json out{{"device", port->device}, {"present", *exists}};
    if (!*exists) return out;
    auto link = devices_->port(port->device, port->port);
    if (!link) return link.status();
    out["port_state"] = link->state;
    out["netdev"] = link->netdev;
    return out;
  }
  auto link = devices_->port(port->device, port->port);
  if (!link) return link.status();
  json out{{"netdev", link->netdev},
           {"port_state", link->state},
           {"physical_state", link->physical_state}};
  if (link->netdev.empty()) return out;
  auto netdev = links_->getLink(kHostNamespace, link->netdev);
  if (!netdev) return netdev.status();
  switch (kind_) {
    case RdmaDeviceFaultKind::kPortDown:
      out["admin_up"] = netdev->admin_up;
      out["operstate"] = netdev->operstate;
      break;
    case RdmaDeviceFaultKind::kGidChange: {
      if (byPrimaryIpv4(fault.params)) {
        auto address = addressBehindGid(*port, link->netdev, fault.params);
        if (!address && !gone(address.status())) return address.status();
        out["gid"] = "ipv4";
        out["gid_address"] = address ? address->local : "";
        break;
      }
      auto gid = devices_->gidAddress(port->device, port->port, port->gid_index);
      if (!gid && !gone(gid.status())) return gid.status();
      out["gid_index"] = port->gid_index;
      out["gid_address"] = gid ? gid->address : "";
      break;
    }
    case RdmaDeviceFaultKind::kMtuChange:
      out["mtu"] = netdev->mtu;
      break;
    case RdmaDeviceFaultKind::kDeviceRemove:
      break;
  }
  return out;
}

}  // namespace fabric_chaos::injectors
