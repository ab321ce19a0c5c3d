#include "injectors/sys/raw_packets.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

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

// A CLOCK_REALTIME time of the recent past on CLOCK_MONOTONIC, by the two clocks' offset now;
// 0 for one in the future or more than a second old (the realtime clock was stepped).
int64_t monotonicFromRealtime(const timespec& stamp) {
  timespec realtime_now;
  timespec monotonic_now;
  ::clock_gettime(CLOCK_REALTIME, &realtime_now);
  ::clock_gettime(CLOCK_MONOTONIC, &monotonic_now);
  const auto ns = [](const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
  const int64_t age = ns(realtime_now) - ns(stamp);
  if (age < 0 || age > 1'000'000'000) return 0;
  return ns(monotonic_now) - age;
}

class PacketReceiver : public RawPacketReceiver {
 public:
  PacketReceiver(int fd, std::string ifname, int ifindex)
      : fd_(fd), ifname_(std::move(ifname)), ifindex_(ifindex) {}
  ~PacketReceiver() override { ::close(fd_); }
  PacketReceiver(const PacketReceiver&) = delete;
  PacketReceiver& operator=(const PacketReceiver&) = delete;

  int fd() const override { return fd_; }
  int ifindex() const override { return ifindex_; }

  core::Result<std::optional<ReceivedFrame>> receive(uint8_t* buffer, size_t size) override {
    sockaddr_ll from{};
    iovec data{buffer, size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr message{};
    message.msg_name = &from;
    message.msg_namelen = sizeof(from);
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    ssize_t got;
    do {
      got = ::recvmsg(fd_, &message, MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return std::optional<ReceivedFrame>();
      if (err == ENODEV || err == ENXIO || err == ENETDOWN) return noSuchInterface(ifname_, err);
      return core::errnoStatus(err, "receive on " + ifname_);
    }
    ReceivedFrame frame;
    frame.length = static_cast<size_t>(got);
    frame.outgoing = from.sll_pkttype == PACKET_OUTGOING;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec stamp;
        std::memcpy(&stamp, CMSG_DATA(c), sizeof(stamp));
        frame.arrival_ns = monotonicFromRealtime(stamp);
      }
    }
    return std::optional<ReceivedFrame>(frame);
  }

 private:
  int fd_;
  std::string ifname_;
  int ifindex_;
};

// A packet socket bound to ifname for `protocol` (network byte order; 0 receives nothing).
core::Result<std::pair<core::UniqueFd, int>> boundPacketSocket(const std::string& ifname,
                                                               uint16_t protocol) {
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
  core::UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, protocol));
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
  address.sll_protocol = protocol;
  address.sll_ifindex = static_cast<int>(ifindex);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const int err = errno;
    if (err == ENODEV || err == ENXIO) return noSuchInterface(ifname, err);
    return core::errnoStatus(err, "cannot bind a packet socket to " + ifname);
  }
  return std::make_pair(std::move(fd), static_cast<int>(ifindex));
}

}  // namespace

core::Result<std::unique_ptr<RawPacketReceiver>> openRawPacketReceiver(const std::string& ifname,
                                                                       uint16_t ethertype) {
  // ETH_P_ALL, not the ethertype: a bridge port's rx handler consumes link-local frames (PFC's
  // 01:80:C2:00:00:01) before protocol-specific sockets see them; only "all" taps run earlier. A
  // classic BPF filter keeps every other frame out of this socket, in the kernel.
  auto bound = boundPacketSocket(ifname, htons(ETH_P_ALL));
  if (!bound.isOk()) return bound.status();
  sock_filter code[] = {
      {BPF_LD | BPF_H | BPF_ABS, 0, 0, 12},          // the ethertype
      {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, ethertype},  // ours: keep; else: drop
      {BPF_RET | BPF_K, 0, 0, 0xffff},
      {BPF_RET | BPF_K, 0, 0, 0},
  };
  sock_fprog program{static_cast<unsigned short>(sizeof(code) / sizeof(code[0])), code};
  if (::setsockopt(bound->first.get(), SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof(program)) !=
      0) {
    return core::errnoStatus(errno, "cannot filter the packet socket for " + ifname);
  }
  // The kernel's receive time on every frame (SCM_TIMESTAMPNS, CLOCK_REALTIME).
  const int on = 1;
  if (::setsockopt(bound->first.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) != 0) {
    return core::errnoStatus(errno, "cannot timestamp the packet socket for " + ifname);
  }
  // Frames queued between socket() and the filter may be of any type: drop them.
  uint8_t discard[64];
  while (::recv(bound->first.get(), discard, sizeof(discard), MSG_DONTWAIT) > 0) {
  }
  return std::unique_ptr<RawPacketReceiver>(
      new PacketReceiver(bound->first.release(), ifname, bound->second));
}

core::Result<std::unique_ptr<RawPacketSocket>> openRawPacketSocket(const std::string& ifname,
                                                                   uint32_t mark,
                                                                   bool bypass_qdisc) {
  // Protocol 0: send-only, nothing received is queued on this socket.
  auto bound = boundPacketSocket(ifname, 0);
  if (!bound.isOk()) return bound.status();
  core::UniqueFd fd = std::move(bound->first);
  const unsigned int ifindex = static_cast<unsigned int>(bound->second);
  if (mark != 0 && ::setsockopt(fd.get(), SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) != 0) {
    const int err = errno;
    if (err == EPERM) {
      return core::Status(core::StatusCode::kPermissionDenied,
                          "marking the frames sent on " + ifname + " needs CAP_NET_ADMIN", err);
    }
    return core::errnoStatus(err, "cannot set SO_MARK on the packet socket for " + ifname);
  }
  const int bypass = 1;
  if (bypass_qdisc &&
      ::setsockopt(fd.get(), SOL_PACKET, PACKET_QDISC_BYPASS, &bypass, sizeof(bypass)) != 0) {
    return core::errnoStatus(errno,
                             "cannot set PACKET_QDISC_BYPASS on the packet socket for " + ifname);
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
