#pragma once
// Raw Ethernet frames through AF_PACKET: the only code that opens packet sockets (the pfc_storm
// emitter sends hand-built 802.1Qbb frames with it; the lab switch's PFC agent receives them and
// sends held frames back out). It acts in the calling thread's network
// namespace, so a caller that wants another one runs them
// under runInNetns (injectors/sys/netns.h) or starts in it. Errors carry the errno.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

// Send-only: the socket is bound with protocol 0, so the kernel queues no received frames on it.
// One thread at a time per socket; distinct sockets are independent.
class RawPacketSocket {
 public:
  virtual ~RawPacketSocket() = default;
  // One frame, as is (the caller writes the Ethernet header; the NIC adds the FCS). Never blocks:
  // a full socket buffer is kUnavailable (EAGAIN), a full device queue kInternal (ENOBUFS), a
  // device gone kNotFound.
  virtual core::Status send(const uint8_t* frame, size_t length) = 0;
  virtual std::array<uint8_t, 6> mac() const = 0;  // the interface's own address
  virtual int ifindex() const = 0;
};

// An AF_PACKET/SOCK_RAW socket bound to ifname in the calling thread's network namespace.
// `mark` (SO_MARK, needs CAP_NET_ADMIN) is set on every frame it sends when not 0, so that a tc
// filter on the port can tell them apart. kNotFound names the interface; kPermissionDenied
// without CAP_NET_RAW; kInvalidArgument for a name the kernel could not hold; kNotSupported for a
// device that is not Ethernet (lo, tun).
// `bypass_qdisc` (PACKET_QDISC_BYPASS) hands frames straight to the driver, past the port's
// queues and its tc egress filters: how a switch sends MAC Control frames, which do not wait
// behind the traffic of a congested port.
core::Result<std::unique_ptr<RawPacketSocket>> openRawPacketSocket(const std::string& ifname,
                                                                   uint32_t mark = 0,
                                                                   bool bypass_qdisc = false);

// A frame a receiver read.
struct ReceivedFrame {
  size_t length = 0;      // bytes copied into the caller's buffer (the frame may have been longer)
  bool outgoing = false;  // sent by this machine out of the interface, not received on it
  // CLOCK_MONOTONIC nanoseconds at which the kernel took the frame in (its receive timestamp),
  // for a reader that must act as of the frame's arrival rather than of its own wake-up; 0 when
  // the kernel gave none.
  int64_t arrival_ns = 0;
};

// Receive-only: the frames of one ethertype on one interface, as they arrive (before any bridge
// or stack sees them, so also frames a bridge drops, such as 802.1Qbb PFC to 01:80:C2:00:00:01)
// and as this machine sends them. Non-blocking; fd() is for poll/epoll.
class RawPacketReceiver {
 public:
  virtual ~RawPacketReceiver() = default;
  virtual int fd() const = 0;
  virtual int ifindex() const = 0;
  // The next queued frame, nullopt when none is queued; kNotFound when the interface went.
  virtual core::Result<std::optional<ReceivedFrame>> receive(uint8_t* buffer, size_t size) = 0;
};

// Bound to ifname and `ethertype` (0x8808: MAC control, PAUSE and PFC) in the calling thread's
// namespace. Errors as openRawPacketSocket.
core::Result<std::unique_ptr<RawPacketReceiver>> openRawPacketReceiver(const std::string& ifname,
                                                                       uint16_t ethertype);

}  // namespace fabric_chaos::sys
