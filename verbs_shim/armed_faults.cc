#include "verbs_shim/armed_faults.h"

#include <cstring>

namespace fabric_chaos::verbs_shim {

bool candidate(ShimFaultKind kind, ShimEventType type) {
  switch (type) {
    case ShimEventType::kPostSend:
      return kind == ShimFaultKind::kPostSendFail || kind == ShimFaultKind::kQpError;
    case ShimEventType::kPostRecv:
      return kind == ShimFaultKind::kPostRecvFail || kind == ShimFaultKind::kQpError;
    case ShimEventType::kCompletion:
      return kind == ShimFaultKind::kCqeError || kind == ShimFaultKind::kQpError ||
             kind == ShimFaultKind::kCompletionDelay;
    case ShimEventType::kRegMr:
      return kind == ShimFaultKind::kRegMrFail;
  }
  return false;
}

bool matches(const ShimFilter& filter, const ShimEventInfo& event) {
  if (!filter.device.empty() &&
      (event.device == nullptr || std::strcmp(filter.device.c_str(), event.device) != 0)) {
    return false;
  }
  if (filter.qp_num && filter.qp_num != event.qp_num) return false;
  if (filter.qp_type && filter.qp_type != event.qp_type) return false;
  if (filter.opcode && filter.opcode != event.opcode) return false;
  return true;
}

void ArmedFaults::arm(const std::vector<ShimFault>& faults, uint64_t seed, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.clear();
  for (size_t i = 0; i < faults.size(); ++i) {
    faults_.push_back({faults[i], TriggerState(faults[i].trigger, seed + i)});
  }
  armed_at_ms_ = now_ms;
  armed_.store(!faults_.empty(), std::memory_order_relaxed);
}

void ArmedFaults::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_.store(false, std::memory_order_relaxed);
  faults_.clear();
}

std::optional<ShimDecision> ArmedFaults::decide(ShimEventType type, const ShimEventInfo& event,
                                                int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Armed& armed : faults_) {
    if (!candidate(armed.fault.kind, type) || !matches(armed.fault.filter, event)) continue;
    if (!armed.trigger.fire(now_ms - armed_at_ms_)) continue;
    return ShimDecision{armed.fault.kind, armed.fault.status, armed.fault.error,
                        armed.fault.delay_ms};
  }
  return std::nullopt;
}

std::vector<InjectionCount> ArmedFaults::injections() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<InjectionCount> out;
  for (const Armed& armed : faults_) {
    out.push_back({armed.fault.kind, armed.trigger.seen(), armed.trigger.fired()});
  }
  return out;
}

}  // namespace fabric_chaos::verbs_shim
