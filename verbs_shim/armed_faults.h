#pragma once
// The faults armed in one shim-loaded program, and the decision, per verbs event, of whether one
// of them strikes it: the filters (verbs_shim/plan.h) pick the events a fault sees, its trigger
// how many of those it takes. The events are what the shim's wrappers see: a post, a successful
// completion, a memory registration. Faults are asked in arming order and the first that fires
// wins. Pure apart from its mutex: time comes in as a parameter. Thread-safe.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "verbs_shim/plan.h"

namespace fabric_chaos::verbs_shim {

enum class ShimEventType {
  kPostSend,    // candidates: post_send_fail, qp_error
  kPostRecv,    // candidates: post_recv_fail, qp_error
  kCompletion,  // a successful completion; candidates: cqe_error, qp_error, completion_delay
  kRegMr,       // a memory registration; candidate: reg_mr_fail
};

// What the wrapper knows about the event; a filter on something unknown (a completion of a QP
// whose type the shim never saw) does not match.
struct ShimEventInfo {
  const char* device = "";
  std::optional<uint32_t> qp_num;
  std::optional<ShimQpType> qp_type;
  std::optional<ShimOpcode> opcode;
};

// The fault that struck: what the wrapper must do.
struct ShimDecision {
  ShimFaultKind kind = ShimFaultKind::kCqeError;
  int status = 0;        // kCqeError
  int error = 0;         // kPost*Fail, kRegMrFail
  int64_t delay_ms = 0;  // kCompletionDelay
};

// Per armed fault, in arming order: matching events seen and injections made.
struct InjectionCount {
  ShimFaultKind kind = ShimFaultKind::kCqeError;
  int64_t seen = 0;
  int64_t fired = 0;
};

class ArmedFaults {
 public:
  // Replaces what was armed; each trigger counts from `now_ms` and draws from seed + its index.
  void arm(const std::vector<ShimFault>& faults, uint64_t seed, int64_t now_ms);
  void disarm();
  // A relaxed load: the wrappers' whole cost while nothing is armed.
  bool armed() const { return armed_.load(std::memory_order_relaxed); }
  std::optional<ShimDecision> decide(ShimEventType type, const ShimEventInfo& event,
                                     int64_t now_ms);
  std::vector<InjectionCount> injections() const;

 private:
  struct Armed {
    ShimFault fault;
    TriggerState trigger;
  };
  std::atomic<bool> armed_{false};
  mutable std::mutex mutex_;  // faults_, armed_at_ms_ and the triggers' state
  std::vector<Armed> faults_;
  int64_t armed_at_ms_ = 0;
};

// Whether a fault of `kind` can strike an event of `type`, and whether its filter matches it.
bool candidate(ShimFaultKind kind, ShimEventType type);
bool matches(const ShimFilter& filter, const ShimEventInfo& event);

}  // namespace fabric_chaos::verbs_shim
