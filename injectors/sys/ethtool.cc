#include "injectors/sys/ethtool.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "injectors/sys/netlink_status.h"

namespace fabric_chaos::sys {
namespace {

std::optional<int64_t> knownSpeed(uint32_t speed) {
  if (speed == 0 || speed == static_cast<uint32_t>(SPEED_UNKNOWN) || speed > INT32_MAX) {
    return std::nullopt;
  }
  return int64_t{speed};
}

// ETHTOOL_GLINKSETTINGS: the first call, with no link-mode words, makes the kernel answer how
// many it wants (negated); the second one reads the settings. False when the driver or kernel
// does not answer it (then ETHTOOL_GSET may).
bool speedFromLinkSettings(int fd, const std::string& ifname, std::optional<int64_t>* speed) {
  // The settings followed by 3 link-mode masks of at most 127 (int8) 32-bit words each.
  std::vector<uint32_t> buffer(sizeof(ethtool_link_settings) / sizeof(uint32_t) + 3 * 127, 0);
  auto* settings = reinterpret_cast<ethtool_link_settings*>(buffer.data());
  settings->cmd = ETHTOOL_GLINKSETTINGS;
  if (!ethtoolRequest(fd, "", ifname, settings, "ETHTOOL_GLINKSETTINGS").isOk()) return false;
  const int8_t words = settings->link_mode_masks_nwords;
  if (words >= 0) return false;  // no handshake: an old kernel
  std::fill(buffer.begin(), buffer.end(), 0);
  settings->cmd = ETHTOOL_GLINKSETTINGS;
  settings->link_mode_masks_nwords = static_cast<int8_t>(-words);
  if (!ethtoolRequest(fd, "", ifname, settings, "ETHTOOL_GLINKSETTINGS").isOk()) return false;
  *speed = knownSpeed(settings->speed);
  return true;
}

}  // namespace

core::UniqueFd openEthtoolSocket() {
  return core::UniqueFd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}

core::Status ethtoolRequest(int fd, const std::string& netns, const std::string& ifname, void* data,
                            const char* what) {
  ifreq request;
  std::memset(&request, 0, sizeof(request));
  std::strncpy(request.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  request.ifr_data = static_cast<char*>(data);
  if (::ioctl(fd, SIOCETHTOOL, &request) >= 0) return core::Status::ok();
  const int err = errno;
  if (err == ENODEV) {
    return core::Status(core::StatusCode::kNotFound, noSuchDevice(netns, ifname), err);
  }
  return core::errnoStatus(err, std::string(what) + " on " + ifname);
}

std::optional<int64_t> linkSpeedMbps(const std::string& ifname) {
  if (!isValidIfname(ifname)) return std::nullopt;
  const core::UniqueFd fd = openEthtoolSocket();
  if (!fd.valid()) return std::nullopt;
  std::optional<int64_t> speed;
  if (speedFromLinkSettings(fd.get(), ifname, &speed)) return speed;
  ethtool_cmd legacy;
  std::memset(&legacy, 0, sizeof(legacy));
  legacy.cmd = ETHTOOL_GSET;
  if (!ethtoolRequest(fd.get(), "", ifname, &legacy, "ETHTOOL_GSET").isOk()) return std::nullopt;
  return knownSpeed(ethtool_cmd_speed(&legacy));
}

}  // namespace fabric_chaos::sys
