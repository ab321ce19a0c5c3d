#pragma once
// The PFC gate of a lab switch (docs/lab.md, "PFC"): one BPF program (lab/bpf/pfc_gate.bpf.c)
// attached to every port's clsact egress, that holds the frames of a paused priority instead of
// sending them, and hands them over here through a ring buffer; frames sent back with send()
// carry a mark the gate lets through. The host kernel has no qdisc that stops one class of a port
// exactly (no plug, prio or mqprio; htb keeps a token debt across rate changes), so the paused
// queue lives in user space. Acts in the calling thread's network namespace (the switch's PFC
// agent runs inside it). One thread at a time.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

inline constexpr int kPfcPriorities = 8;

struct PfcGateConfig {
  uint64_t lossless_dscp_mask = 0;  // bit d: IPv4 DSCP d has priority lossless_priority
  int lossless_priority = 3;        // every other frame has priority 0
  uint32_t reinject_mark = 0;       // skb mark of frames send() puts back (not 0)
};

// A frame the gate held: the port's ifindex, its priority and its bytes from the Ethernet header,
// and the port it entered the switch on (through a bridge too; a frame the switch itself sent has
// no port: 0 or another interface).
struct HeldFrame {
  int ifindex = 0;
  int priority = 0;
  std::vector<uint8_t> bytes;
  int ingress_ifindex = 0;
};

// What the gate's program counted on one port since it was attached, per priority.
struct PfcGateCounts {
  std::array<uint64_t, kPfcPriorities> held{};
  std::array<uint64_t, kPfcPriorities> dropped_no_room{};   // the hand-over ring was full
  std::array<uint64_t, kPfcPriorities> dropped_oversize{};  // a frame longer than the gate holds
};

class PfcGate {
 public:
  virtual ~PfcGate() = default;
  // Frames of `priority` leaving port `ifindex` are held until CLOCK_MONOTONIC reaches
  // `until_ns`; 0 opens it.
  virtual core::Status holdUntil(int ifindex, int priority, int64_t until_ns) = 0;
  // Readable (poll/epoll) when held frames wait.
  virtual int heldFd() const = 0;
  // Every held frame waiting, oldest first.
  virtual core::Result<std::vector<HeldFrame>> takeHeld() = 0;
  // Sends a frame out of port `ifindex`, past the gate, into the port's queues.
  virtual core::Status send(int ifindex, const std::vector<uint8_t>& frame) = 0;
  virtual core::Result<PfcGateCounts> counts(int ifindex) = 0;
};

// Loads the gate and attaches it to every port in `ports` (names in the calling thread's
// namespace), with its ingress tagger (which marks each frame with the port it came in on, so
// that a held frame names the port that fed the queue), replacing a gate already there. kNotFound
// names a missing port; kPermissionDenied without root; kNotSupported when the kernel refuses the
// program. The filters stay attached after the gate object goes (a frame passes them once hold
// times have passed); detachPfcGate removes them.
core::Result<std::unique_ptr<PfcGate>> openPfcGate(const std::vector<std::string>& ports,
                                                   const PfcGateConfig& config);

// Removes the gate's filters (egress and ingress) from a port of the calling thread's namespace;
// OK when there are none.
core::Status detachPfcGate(const std::string& ifname);

}  // namespace fabric_chaos::sys
