#include "injectors/sys/raw_packets.h"

#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"
#include "injectors/sys/netlink_status.h"

namespace fabric_chaos::sys {
namespace {

core::Status noSuchInterface(const std::string& ifname, int err) {
  return core::Status(core::StatusCode::kNotFound,
                      "no such network interface " + ifname + " in this namespace", err);
}

class PacketSocket : public RawPacketSocket {
 public:
  PacketSocket(int fd, std::string ifname, int ifindex, std::array<uint8_t, 6> mac)
      : fd_(fd), ifname_(std::move(ifname)), ifindex_(ifindex), mac_(mac) {}
  ~PacketSocket() override { ::close(fd_); }
  PacketSocket(const PacketSocket&) = delete;
  PacketSocket& operator=(const PacketSocket&) = delete;

  core::Status send(const uint8_t* frame, size_t length) override {
    ssize_t sent;
    do {
      sent = ::send(fd_, frame, length, MSG_DONTWAIT);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) {
      const int err = errno;
      if (err == ENODEV || err == ENXIO) return noSuchInterface(ifname_, err);
      return core::errnoStatus(err, "send on " + ifname_);
    }
    if (static_cast<size_t>(sent) != length) {
      return core::Status(core::StatusCode::kInternal, "send on " + ifname_ + ": " +
                                                           std::to_string(sent) + " of " +
                                                           std::to_string(length) + " bytes sent");
    }
    return core::Status::ok();
  }

  std::array<uint8_t, 6> mac() const override { return mac_; }
  int ifindex() const override { return ifindex_; }

 private:
  int fd_;
  std::string ifname_;
  int ifindex_;
  std::array<uint8_t, 6> mac_;
};

}  // namespace

core::Result<std::unique_ptr<RawPacketSocket>> openRawPacketSocket(const std::string& ifname) {
  if (!isValidIfname(ifname)) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "invalid interface name '" + ifname + "'");
  }
  const unsigned int ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    const int err = errno;
    if (err == ENODEV || err == ENXIO) return noSuchInterface(ifname, err);
    return core::errnoStatus(err, "cannot look up interface " + ifname);
  }
  // Protocol 0: send-only, nothing received is queued on this socket.
  core::UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == EPERM || err == EACCES) {
      return core::Status(core::StatusCode::kPermissionDenied,
                          "opening a packet socket for " + ifname + " needs CAP_NET_RAW", err);
    }
    return core::errnoStatus(err, "cannot open a packet socket for " + ifname);
  }
  sockaddr_ll address;
  std::memset(&address, 0, sizeof(address));
  address.sll_family = AF_PACKET;
  address.sll_protocol = 0;
  address.sll_ifindex = static_cast<int>(ifindex);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const int err = errno;
    if (err == ENODEV || err == ENXIO) return noSuchInterface(ifname, err);
    return core::errnoStatus(err, "cannot bind a packet socket to " + ifname);
  }
  ifreq request;
  std::memset(&request, 0, sizeof(request));
  std::strncpy(request.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd.get(), SIOCGIFHWADDR, &request) != 0) {
    const int err = errno;
    if (err == ENODEV) return noSuchInterface(ifname, err);
    return core::errnoStatus(err, "cannot read the address of " + ifname);
  }
  if (request.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
    return core::Status(core::StatusCode::kNotSupported,
                        ifname + " is not an Ethernet interface (hardware type " +
                            std::to_string(request.ifr_hwaddr.sa_family) + ")");
  }
  std::array<uint8_t, 6> mac{};
  std::memcpy(mac.data(), request.ifr_hwaddr.sa_data, mac.size());
  return std::unique_ptr<RawPacketSocket>(
      new PacketSocket(fd.release(), ifname, static_cast<int>(ifindex), mac));
}

}  // namespace fabric_chaos::sys
