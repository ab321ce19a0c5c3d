#include "lab/pfc_switch_model.h"

#include <algorithm>
#include <utility>

namespace fabric_chaos::lab {

namespace {
constexpr int64_t kNsPerMs = 1'000'000;
}  // namespace

PfcSwitchModel::PfcSwitchModel(std::vector<PfcPortSpec> ports, int64_t hold_grace_ns)
    : ports_(std::move(ports)), state_(ports_.size()), hold_grace_ns_(hold_grace_ns) {}

std::optional<size_t> PfcSwitchModel::portOf(int ifindex) const {
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (ports_[i].ifindex == ifindex) return i;
  }
  return std::nullopt;
}

int64_t PfcSwitchModel::pauseNanoseconds(uint16_t quanta, int64_t rate_bps) {
  if (rate_bps <= 0) return 0;
  // quanta * 512 bits at rate_bps: at most 33.5 Gbit over 1 bit/s, no overflow in 128 bits.
  const __int128 bits = static_cast<__int128>(quanta) * 512;
  return static_cast<int64_t>(bits * 1'000'000'000 / rate_bps);
}

std::vector<HoldChange> PfcSwitchModel::onPauseFrame(size_t port, const injectors::PfcPause& pause,
                                                     int64_t now_ns) {
  std::vector<HoldChange> changes;
  if (port >= ports_.size()) return changes;
  PortState& state = state_[port];
  const std::optional<PfcWatchdogConfig>& watchdog = ports_[port].watchdog;
  for (int p = 0; p < kPfcPriorityCount; ++p) {
    if (((pause.class_enable >> p) & 1) == 0) continue;
    if (((ports_[port].pfc_enabled >> p) & 1) == 0) {
      ++state.counters.rx_pause_ignored[p];
      continue;
    }
    ++state.counters.rx_pause[p];
    Queue& queue = state.queues[p];
    queue.last_frame_ns = now_ns;
    if (queue.storm && watchdog && watchdog->action != PfcWatchdogAction::kAlert) {
      // The watchdog ignores this queue's pause frames; drop keeps the gate discarding until the
      // storm has been quiet for the restoration time.
      if (watchdog->action == PfcWatchdogAction::kDrop) {
        changes.push_back({port, p, now_ns + watchdog->restoration_ms * kNsPerMs + hold_grace_ns_});
      }
      continue;
    }
    const uint16_t quanta = pause.quanta[p];
    if (quanta == 0) {
      // XON: due() ends it now; the gate keeps holding until the queue is sent.
      if (queue.paused) queue.pause_end_ns = now_ns;
      continue;
    }
    const int64_t end = now_ns + pauseNanoseconds(quanta, ports_[port].rate_bps);
    if (!queue.paused) {
      queue.paused = true;
      queue.paused_since_ns = now_ns;
      if (!queue.storm) queue.watch_from_ns = now_ns;
    }
    queue.pause_end_ns = end;
    changes.push_back({port, p, end + hold_grace_ns_});
  }
  return changes;
}

void PfcSwitchModel::onHeld(size_t port, int priority, std::vector<uint8_t> frame,
                            std::optional<size_t> ingress) {
  if (port >= ports_.size() || priority < 0 || priority >= kPfcPriorityCount) return;
  PortState& state = state_[port];
  Queue& queue = state.queues[priority];
  const std::optional<PfcWatchdogConfig>& watchdog = ports_[port].watchdog;
  if (queue.storm && watchdog && watchdog->action == PfcWatchdogAction::kDrop) {
    ++state.counters.watchdog_dropped_frames[priority];
    return;
  }
  const auto size = static_cast<int64_t>(frame.size());
  if (queue.bytes + size > ports_[port].buffer_bytes) {
    ++state.counters.dropped_frames[priority];
    return;
  }
  ++state.counters.held_frames[priority];
  queue.bytes += size;
  queue.frames.push_back(std::move(frame));
  if (ingress && *ingress < ports_.size()) {
    queue.fed_by.resize(ports_.size());
    queue.fed_by[*ingress] = true;
  }
}

void PfcSwitchModel::empty(Queue& queue) {
  queue.frames.clear();
  queue.bytes = 0;
  queue.fed_by.clear();
}

void PfcSwitchModel::dropQueued(PortState& state, int priority) {
  Queue& queue = state.queues[priority];
  state.counters.watchdog_dropped_frames[priority] += queue.frames.size();
  empty(queue);
}

void PfcSwitchModel::endStorm(PortState& state, int priority, int64_t now_ns) {
  state.queues[priority].storm = false;
  ++state.counters.storms_restored[priority];
  state.counters.last_restored_ns[priority] = now_ns;
}

void PfcSwitchModel::watch(size_t port, int p, int64_t now_ns, std::vector<HoldChange>& changes) {
  PortState& state = state_[port];
  Queue& queue = state.queues[p];
  const PfcWatchdogConfig& watchdog = *ports_[port].watchdog;
  const int64_t detection = watchdog.detection_ms * kNsPerMs;
  const int64_t restoration = watchdog.restoration_ms * kNsPerMs;
  if (!queue.storm && queue.paused && now_ns - queue.watch_from_ns >= detection) {
    queue.storm = true;
    ++state.counters.storms_detected[p];
    state.counters.last_detected_ns[p] = now_ns;
    switch (watchdog.action) {
      case PfcWatchdogAction::kForward:
        queue.pause_end_ns = now_ns;  // the pause ends below; its frames flow
        break;
      case PfcWatchdogAction::kDrop:
        state.counters.rx_pause_duration_us[p] +=
            static_cast<uint64_t>(now_ns - queue.paused_since_ns) / 1000;
        queue.paused = false;
        dropQueued(state, p);
        changes.push_back({port, p, queue.last_frame_ns + restoration + hold_grace_ns_});
        break;
      case PfcWatchdogAction::kAlert:
        break;
    }
    return;
  }
  if (queue.storm && now_ns - queue.last_frame_ns >= restoration) {
    endStorm(state, p, now_ns);
    queue.watch_from_ns = now_ns;  // alert: a pause that goes on is watched afresh
    if (watchdog.action == PfcWatchdogAction::kDrop) changes.push_back({port, p, 0});
  }
}

void PfcSwitchModel::setPfcEnabled(size_t port, uint8_t mask, int64_t now_ns) {
  if (port >= ports_.size()) return;
  const uint8_t turned_off = ports_[port].pfc_enabled & static_cast<uint8_t>(~mask);
  ports_[port].pfc_enabled = mask;
  for (int p = 0; p < kPfcPriorityCount; ++p) {
    Queue& queue = state_[port].queues[p];
    if (((turned_off >> p) & 1) != 0 && queue.paused) queue.pause_end_ns = now_ns;
  }
}

void PfcSwitchModel::setWatchdog(size_t port, std::optional<PfcWatchdogConfig> watchdog,
                                 int64_t now_ns, std::vector<HoldChange>& changes) {
  if (port >= ports_.size()) return;
  PortState& state = state_[port];
  const std::optional<PfcWatchdogConfig>& before = ports_[port].watchdog;
  for (int p = 0; p < kPfcPriorityCount; ++p) {
    Queue& queue = state.queues[p];
    if (queue.storm) {
      endStorm(state, p, now_ns);
      // Drop held the gate shut to discard; a pause in progress keeps it shut until its end.
      if (before && before->action == PfcWatchdogAction::kDrop) {
        changes.push_back({port, p, queue.paused ? queue.pause_end_ns + hold_grace_ns_ : 0});
      }
    }
    queue.watch_from_ns = now_ns;
  }
  ports_[port].watchdog = watchdog;
}

std::vector<Release> PfcSwitchModel::due(int64_t now_ns, std::vector<HoldChange>& changes) {
  std::vector<Release> releases;
  for (size_t port = 0; port < ports_.size(); ++port) {
    PortState& state = state_[port];
    for (int p = 0; p < kPfcPriorityCount; ++p) {
      Queue& queue = state.queues[p];
      if (ports_[port].watchdog) watch(port, p, now_ns, changes);
      const bool ended = queue.paused && queue.pause_end_ns <= now_ns;
      if (!ended && (queue.paused || queue.frames.empty())) continue;
      if (ended) {
        queue.paused = false;
        state.counters.rx_pause_duration_us[p] +=
            static_cast<uint64_t>(queue.pause_end_ns - queue.paused_since_ns) / 1000;
        changes.push_back({port, p, 0});
      }
      if (!queue.frames.empty()) releases.push_back(takeQueue(port, p));
    }
  }
  return releases;
}

std::vector<Release> PfcSwitchModel::releaseAll() {
  std::vector<Release> releases;
  for (size_t port = 0; port < ports_.size(); ++port) {
    for (int p = 0; p < kPfcPriorityCount; ++p) {
      if (!state_[port].queues[p].frames.empty()) releases.push_back(takeQueue(port, p));
    }
  }
  return releases;
}

Release PfcSwitchModel::takeQueue(size_t port, int priority) {
  PortState& state = state_[port];
  Queue& queue = state.queues[priority];
  Release release{port, priority, {}};
  release.frames.assign(std::make_move_iterator(queue.frames.begin()),
                        std::make_move_iterator(queue.frames.end()));
  state.counters.released_frames[priority] += release.frames.size();
  empty(queue);
  return release;
}

std::optional<int64_t> PfcSwitchModel::nextDeadline() const {
  std::optional<int64_t> next;
  auto consider = [&](int64_t at) {
    if (!next || at < *next) next = at;
  };
  for (size_t port = 0; port < ports_.size(); ++port) {
    const std::optional<PfcWatchdogConfig>& watchdog = ports_[port].watchdog;
    for (const Queue& queue : state_[port].queues) {
      if (watchdog && queue.storm) {
        consider(queue.last_frame_ns + watchdog->restoration_ms * kNsPerMs);
      } else if (watchdog && queue.paused) {
        consider(queue.watch_from_ns + watchdog->detection_ms * kNsPerMs);
      }
      int64_t at;
      if (queue.paused) {
        at = queue.pause_end_ns;
      } else if (!queue.frames.empty()) {
        at = 0;  // held after its pause ended: now
      } else {
        continue;
      }
      consider(at);
    }
  }
  return next;
}

bool PfcSwitchModel::inStorm(size_t port, int priority) const {
  return port < ports_.size() && priority >= 0 && priority < kPfcPriorityCount &&
         state_[port].queues[priority].storm;
}

bool PfcSwitchModel::paused(size_t port, int priority) const {
  return port < ports_.size() && priority >= 0 && priority < kPfcPriorityCount &&
         state_[port].queues[priority].paused;
}

PfcPortCounters PfcSwitchModel::counters(size_t port, int64_t now_ns) const {
  if (port >= ports_.size()) return {};
  PfcPortCounters out = state_[port].counters;
  for (int p = 0; p < kPfcPriorityCount; ++p) {
    const Queue& queue = state_[port].queues[p];
    if (!queue.paused) continue;
    const int64_t until = std::min(now_ns, queue.pause_end_ns);
    if (until > queue.paused_since_ns) {
      out.rx_pause_duration_us[p] += static_cast<uint64_t>(until - queue.paused_since_ns) / 1000;
    }
  }
  return out;
}

int64_t PfcSwitchModel::queuedBytes(size_t port, int priority) const {
  if (port >= ports_.size() || priority < 0 || priority >= kPfcPriorityCount) return 0;
  return state_[port].queues[priority].bytes;
}

std::vector<PfcQueueLoad> PfcSwitchModel::queueLoads() const {
  std::vector<PfcQueueLoad> loads;
  for (size_t port = 0; port < ports_.size(); ++port) {
    for (int p = 0; p < kPfcPriorityCount; ++p) {
      const Queue& queue = state_[port].queues[p];
      if (queue.frames.empty()) continue;
      PfcQueueLoad load{port, p, queue.bytes, {}};
      for (size_t in = 0; in < queue.fed_by.size(); ++in) {
        if (queue.fed_by[in]) load.fed_by.push_back(in);
      }
      loads.push_back(std::move(load));
    }
  }
  return loads;
}

}  // namespace fabric_chaos::lab
