#pragma once
// Link control through rtnetlink (libnl-route-3). The only code that changes link state.
// Failures come back as Status with the NLE_* code as origin: a missing device is kNotFound, a
// missing capability kPermissionDenied. Thread-safe: every call opens its own netlink socket.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

struct LinkInfo {
  std::string ifname;
  int ifindex = 0;
  bool admin_up = false;  // IFF_UP
  bool carrier = false;   // IFF_LOWER_UP
  std::string operstate;  // "up", "down", "lowerlayerdown", ...
  std::string mac = {};   // "02:00:00:00:00:01"; "" for a device without a link-layer address
  uint64_t tx_bytes = 0;  // sent since the device was created (what `ip -s link` shows)
  uint32_t mtu = 0;       // bytes (IFLA_MTU)
};

class LinkControl {
 public:
  virtual ~LinkControl() = default;
  virtual core::Result<LinkInfo> getLink(const std::string& netns, const std::string& ifname) = 0;
  // Every link in netns ("" = the caller's), sorted by name: what an agent reports about its
  // host. A namespace that does not exist is kNotFound.
  virtual core::Result<std::vector<LinkInfo>> listLinks(const std::string& netns) = 0;
  virtual core::Status setAdminUp(const std::string& netns, const std::string& ifname, bool up) = 0;
  // The netdev's MTU in bytes; the kernel refuses one outside the device's range
  // (kInvalidArgument).
  virtual core::Status setMtu(const std::string& netns, const std::string& ifname,
                              uint32_t mtu) = 0;
  // The IPv4 addresses on ifname, without prefix length ("10.200.0.3"), in the kernel's order:
  // where a traffic fault's sink listens. A missing device is kNotFound.
  virtual core::Result<std::vector<std::string>> ipv4Addresses(const std::string& netns,
                                                               const std::string& ifname) = 0;
};

std::unique_ptr<LinkControl> makeNetlinkLinkControl();

}  // namespace fabric_chaos::sys
