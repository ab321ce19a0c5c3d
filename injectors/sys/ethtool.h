#pragma once
// The SIOCETHTOOL ioctl, the one way this project asks a network device what ethtool asks it:
// the request helper that the offloads adapter builds on, and the link speed. Everything acts in
// the calling thread's network namespace (wrap in runInNetns, injectors/sys/netns.h, for another).

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "core/unique_fd.h"

namespace fabric_chaos::sys {

// A socket that ethtool requests can be sent on (AF_INET datagram, never bound); invalid with
// errno set when the kernel refused one.
core::UniqueFd openEthtoolSocket();

// SIOCETHTOOL on ifname with `data`, an ethtool_* request whose cmd is set. kNotFound (ENODEV)
// names the device and `netns` (for the message only); any other failure carries the errno
// and `what`.
core::Status ethtoolRequest(int fd, const std::string& netns, const std::string& ifname, void* data,
                            const char* what);

// Link speed from ETHTOOL_GLINKSETTINGS, falling back to ETHTOOL_GSET on kernels without the
// handshake, Mbit/s; nullopt when the driver does not report one (SPEED_UNKNOWN, 0, no ethtool
// support) or the interface cannot be asked (absent, invalid name).
std::optional<int64_t> linkSpeedMbps(const std::string& ifname);

}  // namespace fabric_chaos::sys
