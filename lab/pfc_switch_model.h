#pragma once
// What a PFC-honouring switch does with pause frames, as pure logic (docs/lab.md, "PFC"): the
// switch's PFC agent (app/pfc_switch_cmd.cc) feeds it the frames its ports receive and the frames
// its gate held (injectors/sys/pfc_gate.h), and asks it when to hold, what to send back and when.
// - A PFC frame received on a port pauses that port's egress for each priority in its class-enable
//   vector that the port has PFC enabled on, for quanta x 512 bit times at the port's rate,
//   counted from the frame's arrival. A later frame replaces the time left (802.1Qbb); quanta 0
//   (XON) ends the pause at once.
// - While paused, the priority's frames queue here, in arrival order, up to the port's buffer in
//   bytes; a frame that does not fit is dropped and counted. Each queue knows the ports its frames
//   came in on (queueLoads), which is what pause propagation reads (lab/pfc_propagation.h).
// - When the pause ends, its frames are released, oldest first.
// - With a watchdog on the port (injectors/model/pfc_watchdog_config.h): a priority paused for its
//   detection time is in a storm; drop discards its queued and further frames and ignores its
//   pause frames, forward ignores its pause frames and lets its frames flow, alert only counts.
//   The storm ends once no pause frame of that priority arrived for the restoration time.
// Counters use the names operators read from NICs (mlx5's ethtool -S): rx_prioN_pause (frames
// received with priority N enabled, XON included) and rx_prioN_pause_duration (microseconds
// paused). Not thread-safe; time is CLOCK_MONOTONIC nanoseconds passed in.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "injectors/model/pfc_watchdog_config.h"
#include "injectors/pfc/pfc_frame.h"

namespace fabric_chaos::lab {

using injectors::PfcWatchdogAction;
using injectors::PfcWatchdogConfig;

inline constexpr int kPfcPriorityCount = 8;

struct PfcPortSpec {
  std::string name;  // "p1"
  int ifindex = 0;
  int64_t rate_bps = 0;                       // the modelled line rate the pause time is counted at
  int64_t buffer_bytes = 0;                   // per priority: what a paused queue holds
  uint8_t pfc_enabled = 0xff;                 // bit p: the port honours pauses of priority p
  std::optional<PfcWatchdogConfig> watchdog;  // none: pauses last as long as they are refreshed
};

struct PfcPortCounters {
  std::array<uint64_t, kPfcPriorityCount> rx_pause{};              // rx_prioN_pause
  std::array<uint64_t, kPfcPriorityCount> rx_pause_duration_us{};  // rx_prioN_pause_duration
  std::array<uint64_t, kPfcPriorityCount> rx_pause_ignored{};      // PFC disabled on that priority
  std::array<uint64_t, kPfcPriorityCount> held_frames{};           // frames queued while paused
  std::array<uint64_t, kPfcPriorityCount> released_frames{};       // of them, sent after the pause
  std::array<uint64_t, kPfcPriorityCount> dropped_frames{};        // did not fit the buffer
  // The watchdog's, as SONiC's pfcwd counts them per queue.
  std::array<uint64_t, kPfcPriorityCount> storms_detected{};
  std::array<uint64_t, kPfcPriorityCount> storms_restored{};
  std::array<uint64_t, kPfcPriorityCount> watchdog_dropped_frames{};  // by the drop action
  std::array<int64_t, kPfcPriorityCount> last_detected_ns{};          // 0: never
  std::array<int64_t, kPfcPriorityCount> last_restored_ns{};
};

// The gate's hold time of one port and priority changes: hold until `until_ns`, or open (0).
struct HoldChange {
  size_t port = 0;
  int priority = 0;
  int64_t until_ns = 0;
};

// A queue holding frames: its bytes and the ports they came in on, ascending.
struct PfcQueueLoad {
  size_t port = 0;
  int priority = 0;
  int64_t bytes = 0;
  std::vector<size_t> fed_by;
};

// Frames to send out of a port, oldest first.
struct Release {
  size_t port = 0;
  int priority = 0;
  std::vector<std::vector<uint8_t>> frames;
};

class PfcSwitchModel {
 public:
  // hold_grace_ns: how long past a pause's end the gate keeps holding, so that the agent sends
  // the held frames before new ones pass them; it is also the most a dead agent holds a port past
  // the pause. Each port's watchdog is its spec's.
  PfcSwitchModel(std::vector<PfcPortSpec> ports, int64_t hold_grace_ns);

  const std::vector<PfcPortSpec>& ports() const { return ports_; }
  // The port with this ifindex, nullopt when it is not one of ours.
  std::optional<size_t> portOf(int ifindex) const;

  // A PFC frame arrived on `port` at now_ns; returns the gate changes to make.
  std::vector<HoldChange> onPauseFrame(size_t port, const injectors::PfcPause& pause,
                                       int64_t now_ns);
  // The gate held a frame of `priority` on `port`, which came in on port `ingress` (nullopt: not
  // through one of the ports, such as the switch's own). Queued while the pause lasts; released
  // by the next due() when the pause already ended (the frame raced the gate's opening).
  void onHeld(size_t port, int priority, std::vector<uint8_t> frame,
              std::optional<size_t> ingress = std::nullopt);
  // Pauses ended by now_ns: their frames, to send now, then the gate changes to make once they
  // are sent (opening; or, for the watchdog's drop action, holding to discard). Also frames held
  // after their pause ended, and the watchdog's detections and restorations due by now_ns.
  std::vector<Release> due(int64_t now_ns, std::vector<HoldChange>& changes);
  // Every queued frame, whatever its pause: what an agent that stops sends on its way out.
  std::vector<Release> releaseAll();
  // When due() next has work; nullopt when nothing is paused.
  std::optional<int64_t> nextDeadline() const;

  // Reconfiguration while running (a pfc_config or pfc_watchdog fault on the lab switch). A
  // priority whose PFC goes off ends its pause now (the next due() sends its frames); a watchdog
  // that changes ends the port's storms (counted as restored; a drop stops discarding), and a
  // pause in progress is watched afresh from now_ns.
  void setPfcEnabled(size_t port, uint8_t mask, int64_t now_ns);
  void setWatchdog(size_t port, std::optional<PfcWatchdogConfig> watchdog, int64_t now_ns,
                   std::vector<HoldChange>& changes);

  bool paused(size_t port, int priority) const;
  // Whether the watchdog holds the priority in a storm.
  bool inStorm(size_t port, int priority) const;
  // Counters at now_ns (a pause in progress counts up to now).
  PfcPortCounters counters(size_t port, int64_t now_ns) const;
  // Bytes queued on a paused priority.
  int64_t queuedBytes(size_t port, int priority) const;
  // Every queue that holds frames, by port then priority.
  std::vector<PfcQueueLoad> queueLoads() const;

  // The pause time of `quanta` at `rate_bps`, in nanoseconds.
  static int64_t pauseNanoseconds(uint16_t quanta, int64_t rate_bps);

 private:
  struct Queue {
    bool paused = false;
    int64_t paused_since_ns = 0;
    int64_t pause_end_ns = 0;
    std::deque<std::vector<uint8_t>> frames;
    int64_t bytes = 0;
    bool storm = false;         // the watchdog acts on this queue
    int64_t last_frame_ns = 0;  // the last pause frame of this priority
    int64_t watch_from_ns = 0;  // paused continuously since then, as the watchdog sees it
    std::vector<bool> fed_by;   // by port: a queued frame came in on it
  };
  struct PortState {
    std::array<Queue, kPfcPriorityCount> queues;
    PfcPortCounters counters;
  };

  void watch(size_t port, int priority, int64_t now_ns, std::vector<HoldChange>& changes);
  void dropQueued(PortState& state, int priority);
  static void empty(Queue& queue);
  void endStorm(PortState& state, int priority, int64_t now_ns);  // counted as restored
  // The queue's frames, oldest first, counted as released; the queue left empty.
  Release takeQueue(size_t port, int priority);

  std::vector<PfcPortSpec> ports_;
  std::vector<PortState> state_;
  int64_t hold_grace_ns_;
};

}  // namespace fabric_chaos::lab
