#pragma once
// What an armed verbs shim injects into the RDMA program it is loaded in (issue 13, the verbs
// fault library): faults sent by the agent over the shim's control channel, each with a filter
// (which completions or posts) and a trigger (how often). This file is the part that needs no
// verbs: the wire format, its validation, and the trigger's decisions. Pure.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fabric_chaos::verbs_shim {

enum class ShimFaultKind {
  kCqeError,         // a successful completion returned with an error status, its QP then errored
  kQpError,          // the QP of a matching post or completion moved to IBV_QPS_ERR
  kPostSendFail,     // ibv_post_send returns an errno, the work request not posted
  kPostRecvFail,     // ibv_post_recv likewise
  kCompletionDelay,  // a CQ's completions held back for delay_ms: a stalled NIC or PCIe
  kRegMrFail,        // ibv_reg_mr (and its iova forms) fails with an errno
};
// "cqe_error", "qp_error", "post_send_fail", "post_recv_fail", "completion_delay",
// "reg_mr_fail"
const char* describe(ShimFaultKind kind);
std::optional<ShimFaultKind> shimFaultKindOf(std::string_view name);

// What a work request or completion does, as filters name it: "send" (SEND, with immediate or
// invalidate), "rdma_write" (with or without immediate), "rdma_read", "atomic" (compare-swap,
// fetch-add), "recv" (a receive, or the receive side of a WRITE with immediate).
enum class ShimOpcode { kSend, kRdmaWrite, kRdmaRead, kAtomic, kRecv };
const char* describe(ShimOpcode opcode);
std::optional<ShimOpcode> shimOpcodeOf(std::string_view name);

// The transport of a QP, as libibverbs' enum ibv_qp_type has it: "rc", "uc", "ud".
enum class ShimQpType { kRc, kUc, kUd };
const char* describe(ShimQpType type);
std::optional<ShimQpType> shimQpTypeOf(std::string_view name);

// libibverbs' completion statuses (enum ibv_wc_status) by the name the verbs API gives them,
// lower case without the IBV_WC_ prefix: "retry_exc_err" is 12, what NCCL prints as
// "status=12". nullopt / nullptr for names and numbers that are not statuses.
std::optional<int> wcStatusOf(std::string_view name);
const char* wcStatusName(int status);

// Which events a fault sees; every field set must match. A reg_mr_fail sees registrations, which
// have no QP or opcode: only `device` applies to it.
struct ShimFilter {
  std::optional<uint32_t> qp_num;     // only this QP's completions or posts
  std::optional<ShimQpType> qp_type;  // only QPs of this transport
  std::optional<ShimOpcode> opcode;   // only these work requests or completions
  std::string device;                 // only this device's ("rxe0"); "" = any
};

struct ShimTrigger {
  double probability = 1.0;  // of each matching event, once the others allow it
  int64_t every_nth = 1;     // only every Nth matching event is a candidate
  int64_t after_ms = 0;      // nothing before this long after arming
  int64_t count = -1;        // at most this many injections; -1 = no limit
};

struct ShimFault {
  ShimFaultKind kind = ShimFaultKind::kCqeError;
  ShimFilter filter;
  ShimTrigger trigger;
  int status = 12;         // kCqeError: the status returned (retry_exc_err)
  int error = 12;          // kPost*Fail, kRegMrFail: the errno returned (ENOMEM)
  int64_t delay_ms = 100;  // kCompletionDelay: how long the CQ's completions are held
};

// Which kinds take which knobs: status for cqe_error, errno for the failing calls, delay_ms for
// completion_delay; and which filters apply (reg_mr_fail: device only).
bool takesStatus(ShimFaultKind kind);
bool takesErrno(ShimFaultKind kind);
bool takesQpFilters(ShimFaultKind kind);

// {"kind", "filter": {"qp_num", "qp_type", "opcode", "device"}, "trigger": {"probability",
//  "every_nth", "after_ms", "count"}, "status": "retry_exc_err", "errno": "ENOMEM" | "EAGAIN" |
//  "EINVAL" | "EFAULT", "delay_ms"}. kInvalidArgument naming the field: unknown kinds, fields or
// status names, a probability outside 0-1, counts below 1, a knob the kind does not take.
core::Result<ShimFault> shimFaultFromJson(const nlohmann::json& doc);
nlohmann::json toJson(const ShimFault& fault);

// One armed fault's trigger: asked for every matching event, in order. Not thread-safe (the shim
// keeps each under its lock); deterministic for a given seed.
class TriggerState {
 public:
  TriggerState(const ShimTrigger& trigger, uint64_t seed);
  // Whether this matching event, `elapsed_ms` after arming, is injected.
  bool fire(int64_t elapsed_ms);
  int64_t seen() const { return seen_; }
  int64_t fired() const { return fired_; }

 private:
  double nextUniform();

  ShimTrigger trigger_;
  uint64_t rng_;
  int64_t seen_ = 0;  // matching events at or after after_ms
  int64_t fired_ = 0;
};

}  // namespace fabric_chaos::verbs_shim
