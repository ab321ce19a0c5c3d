#pragma once
// Pause propagation of a lossless lab switch (docs/lab.md, "Pause propagation"), as pure logic:
// when a paused egress queue (lab/pfc_switch_model.h) holds more than the XOFF threshold, the
// switch pauses, on that priority, every port whose frames are in it, so that the upstream sender
// stops before the queue overflows; once no queue it feeds holds more than the XON threshold, an
// XON (quanta 0) resumes it at once. This is how a lossless fabric spreads congestion: a storm
// that pauses one port fills its queue, which pauses the ports feeding it, whose own queues then
// fill on the next switch, and so on. A switch neighbour's PFC agent honours those frames; a host
// NIC of the lab (a veth, a virtio NIC) does not, but receives and counts them.
// A pause is 65535 quanta at the paused port's rate, refreshed every half pause time while the
// cause lasts, as a lossless switch keeps its upstream paused. Only priorities the port has PFC
// enabled on are paused. Counters: tx_pause (frames sent per priority, XON included: the NIC
// counter tx_prioN_pause). Not thread-safe; time is CLOCK_MONOTONIC nanoseconds passed in.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "lab/pfc_switch_model.h"

namespace fabric_chaos::lab {

// 0 xoff_bytes: never propagate. xon_bytes <= xoff_bytes.
struct PfcXoffThresholds {
  int64_t xoff_bytes = 0;
  int64_t xon_bytes = 0;
};

// One PFC frame to send out of `port`: `quanta` on `priority` (0: XON).
struct PfcPauseOut {
  size_t port = 0;
  int priority = 0;
  uint16_t quanta = 0;
};

inline constexpr uint16_t kPropagatedPauseQuanta = 65535;

class PfcPausePropagation {
 public:
  // rates_bps: each port's modelled rate, by the model's port index.
  PfcPausePropagation(std::vector<int64_t> rates_bps, PfcXoffThresholds thresholds);

  // The queues as they are now (PfcSwitchModel::queueLoads) and each port's PFC enable mask:
  // the frames to send now (new pauses, refreshes due by now_ns, XONs).
  std::vector<PfcPauseOut> update(const std::vector<PfcQueueLoad>& loads,
                                  const std::vector<uint8_t>& pfc_enabled, int64_t now_ns);
  // An XON for every pause in force: what a stopping agent sends so that nothing stays paused.
  std::vector<PfcPauseOut> releaseAll();
  // When update() next has a refresh to send; nullopt when nothing is paused.
  std::optional<int64_t> nextDeadline() const;

  bool pausing(size_t port, int priority) const;
  uint64_t txPause(size_t port, int priority) const;
  const PfcXoffThresholds& thresholds() const { return thresholds_; }

 private:
  struct Upstream {
    bool pausing = false;
    int64_t refresh_ns = 0;  // when the pause in force needs its next frame
  };
  struct PortState {
    std::array<Upstream, kPfcPriorityCount> priorities;
    std::array<uint64_t, kPfcPriorityCount> tx_pause{};
  };

  void send(size_t port, int priority, uint16_t quanta, int64_t now_ns,
            std::vector<PfcPauseOut>& out);

  std::vector<int64_t> rates_bps_;
  PfcXoffThresholds thresholds_;
  std::vector<PortState> ports_;
};

}  // namespace fabric_chaos::lab
