#include "lab/pfc_propagation.h"

#include <algorithm>
#include <utility>

namespace fabric_chaos::lab {

PfcPausePropagation::PfcPausePropagation(std::vector<int64_t> rates_bps,
                                         PfcXoffThresholds thresholds)
    : rates_bps_(std::move(rates_bps)), thresholds_(thresholds), ports_(rates_bps_.size()) {}

void PfcPausePropagation::send(size_t port, int priority, uint16_t quanta, int64_t now_ns,
                               std::vector<PfcPauseOut>& out) {
  out.push_back({port, priority, quanta});
  ++ports_[port].tx_pause[priority];
  Upstream& upstream = ports_[port].priorities[priority];
  upstream.pausing = quanta != 0;
  // Half the pause time: the next frame arrives long before the pause lapses, as a continuous
  // storm's does (injectors/pfc/pfc_emit_timing.h).
  upstream.refresh_ns =
      now_ns + std::max<int64_t>(1, PfcSwitchModel::pauseNanoseconds(quanta, rates_bps_[port]) / 2);
}

std::vector<PfcPauseOut> PfcPausePropagation::update(const std::vector<PfcQueueLoad>& loads,
                                                     const std::vector<uint8_t>& pfc_enabled,
                                                     int64_t now_ns) {
  std::vector<PfcPauseOut> out;
  if (thresholds_.xoff_bytes <= 0) return out;
  // Per port and priority: does a queue it feeds pass XOFF, or still hold more than XON?
  std::vector<std::array<bool, kPfcPriorityCount>> over_xoff(ports_.size());
  std::vector<std::array<bool, kPfcPriorityCount>> over_xon(ports_.size());
  for (const PfcQueueLoad& load : loads) {
    if (load.priority < 0 || load.priority >= kPfcPriorityCount) continue;
    for (size_t in : load.fed_by) {
      if (in >= ports_.size()) continue;
      if (load.bytes >= thresholds_.xoff_bytes) over_xoff[in][load.priority] = true;
      if (load.bytes > thresholds_.xon_bytes) over_xon[in][load.priority] = true;
    }
  }
  for (size_t port = 0; port < ports_.size(); ++port) {
    const uint8_t enabled = port < pfc_enabled.size() ? pfc_enabled[port] : 0;
    for (int p = 0; p < kPfcPriorityCount; ++p) {
      Upstream& upstream = ports_[port].priorities[p];
      const bool allowed = ((enabled >> p) & 1) != 0;
      const bool want = allowed && (over_xoff[port][p] || (upstream.pausing && over_xon[port][p]));
      if (want && (!upstream.pausing || now_ns >= upstream.refresh_ns)) {
        send(port, p, kPropagatedPauseQuanta, now_ns, out);
      } else if (!want && upstream.pausing) {
        send(port, p, 0, now_ns, out);
      }
    }
  }
  return out;
}

std::vector<PfcPauseOut> PfcPausePropagation::releaseAll() {
  std::vector<PfcPauseOut> out;
  for (size_t port = 0; port < ports_.size(); ++port) {
    for (int p = 0; p < kPfcPriorityCount; ++p) {
      if (ports_[port].priorities[p].pausing) send(port, p, 0, 0, out);
    }
  }
  return out;
}

std::optional<int64_t> PfcPausePropagation::nextDeadline() const {
  std::optional<int64_t> next;
  for (const PortState& port : ports_) {
    for (const Upstream& upstream : port.priorities) {
      if (upstream.pausing && (!next || upstream.refresh_ns < *next)) next = upstream.refresh_ns;
    }
  }
  return next;
}

bool PfcPausePropagation::pausing(size_t port, int priority) const {
  return port < ports_.size() && priority >= 0 && priority < kPfcPriorityCount &&
         ports_[port].priorities[priority].pausing;
}

uint64_t PfcPausePropagation::txPause(size_t port, int priority) const {
  if (port >= ports_.size() || priority < 0 || priority >= kPfcPriorityCount) return 0;
  return ports_[port].tx_pause[priority];
}

}  // namespace fabric_chaos::lab
