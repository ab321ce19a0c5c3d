#pragma once
// Raw Ethernet frames through AF_PACKET: the only code that opens packet sockets (the pfc_storm
// emitter sends hand-built 802.1Qbb frames with it). It acts in the calling thread's network
// namespace, so a caller that wants another one runs them
// under runInNetns (injectors/sys/netns.h) or starts in it. Errors carry the errno.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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
// kNotFound names the interface; kPermissionDenied without CAP_NET_RAW; kInvalidArgument for a
// name the kernel could not hold; kNotSupported for a device that is not Ethernet (lo, tun).
core::Result<std::unique_ptr<RawPacketSocket>> openRawPacketSocket(const std::string& ifname);

}  // namespace fabric_chaos::sys
