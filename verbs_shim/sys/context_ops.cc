#include "verbs_shim/sys/context_ops.h"

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <mutex>

#include "core/clock.h"
#include "verbs_shim/sys/held_completions.h"
#include "verbs_shim/sys/qp_registry.h"

namespace fabric_chaos::verbs_shim {
namespace {

using core::Status;
using core::StatusCode;

using PostSend = int (*)(ibv_qp*, ibv_send_wr*, ibv_send_wr**);
using PostRecv = int (*)(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
using PollCq = int (*)(ibv_cq*, int, ibv_wc*);
using CreateQpEx = ibv_qp* (*)(ibv_context*, ibv_qp_init_attr_ex*);

// One interposed context: its provider's ops, published by a release store of `context` after
// they are written, so that a wrapper that finds the context also finds them.
struct Saved {
  std::atomic<ibv_context*> context{nullptr};
  PostSend post_send = nullptr;
  PostRecv post_recv = nullptr;
  PollCq poll_cq = nullptr;
  CreateQpEx create_qp_ex = nullptr;  // null: not an extended context, or none
};

std::array<Saved, kMaxContexts> g_saved;
// Slots [0, g_slots_used) have ever held a context: the wrappers scan no further. A program opens
// one context per device, so that is one or two slots, not kMaxContexts (the whole table cost
// 180 ns per poll under TCG; bench/verbs_shim_bench).
std::atomic<int> g_slots_used{0};
std::mutex g_table_mutex;  // writers of g_saved and g_slots_used

ArmedFaults& faults() {
  static auto* armed = new ArmedFaults();  // outlives static destructors: wrappers may still run
  return *armed;
}

const Saved* savedFor(const ibv_context* context) {
  const int used = g_slots_used.load(std::memory_order_acquire);
  for (int i = 0; i < used; ++i) {
    const Saved& s = g_saved[static_cast<size_t>(i)];
    if (s.context.load(std::memory_order_acquire) == context) return &s;
  }
  return nullptr;
}

int64_t nowMs() { return core::steadyNowNs() / 1'000'000; }

const char* deviceName(const ibv_context* context) {
  return context->device != nullptr ? context->device->name : "";
}

ShimOpcode opcodeOfSend(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return ShimOpcode::kRdmaWrite;
    case IBV_WR_RDMA_READ:
      return ShimOpcode::kRdmaRead;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return ShimOpcode::kAtomic;
    default:
      return ShimOpcode::kSend;
  }
}

ShimOpcode opcodeOfCompletion(ibv_wc_opcode opcode) {
  switch (opcode) {
    case IBV_WC_RDMA_WRITE:
      return ShimOpcode::kRdmaWrite;
    case IBV_WC_RDMA_READ:
      return ShimOpcode::kRdmaRead;
    case IBV_WC_COMP_SWAP:
    case IBV_WC_FETCH_ADD:
      return ShimOpcode::kAtomic;
    case IBV_WC_RECV:
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return ShimOpcode::kRecv;
    default:
      return ShimOpcode::kSend;
  }
}

// A post's fate while armed: an errno to return (the request not posted), or 0 to post it, the
// QP first moved to error when qp_error struck.
int armedPostOutcome(ShimEventType type, ibv_qp* qp, std::optional<ShimOpcode> opcode) {
  const ShimEventInfo event{deviceName(qp->context), qp->qp_num, shimQpTypeOf(qp), opcode};
  const auto decision = faults().decide(type, event, nowMs());
  if (!decision) return 0;
  if (decision->kind == ShimFaultKind::kQpError) {
    registerQp(qp);  // a QP made before the shim saw its creation is still ours to error
    moveQpToError(qp->qp_num);
    return 0;
  }
  return decision->error;
}

int shimPostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  const Saved* saved = savedFor(qp->context);
  if (saved == nullptr) return EINVAL;  // released while a post was on its way in
  if (faults().armed() && wr != nullptr) {
    if (const int error = armedPostOutcome(ShimEventType::kPostSend, qp, opcodeOfSend(wr->opcode));
        error != 0) {
      *bad_wr = wr;
      return error;
    }
  }
  return saved->post_send(qp, wr, bad_wr);
}

int shimPostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const Saved* saved = savedFor(qp->context);
  if (saved == nullptr) return EINVAL;
  if (faults().armed() && wr != nullptr) {
    if (const int error = armedPostOutcome(ShimEventType::kPostRecv, qp, ShimOpcode::kRecv);
        error != 0) {
      *bad_wr = wr;
      return error;
    }
  }
  return saved->post_recv(qp, wr, bad_wr);
}

// The armed path of a poll that returned `got` completions: each successful one is an event.
// Returns what the program gets: `got`, or 0 when completion_delay took the batch.
int armedPoll(ibv_cq* cq, int got, ibv_wc* wc) {
  const int64_t now_ms = nowMs();
  std::array<uint32_t, 16> to_error{};
  size_t errors = 0;
  int64_t delay_ms = 0;
  for (int i = 0; i < got; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) continue;
    const ShimEventInfo event{deviceName(cq->context), wc[i].qp_num, qpTypeOf(wc[i].qp_num),
                              opcodeOfCompletion(wc[i].opcode)};
    const auto decision = faults().decide(ShimEventType::kCompletion, event, now_ms);
    if (!decision) continue;
    if (decision->kind == ShimFaultKind::kCompletionDelay) {
      delay_ms = std::max(delay_ms, decision->delay_ms);
      continue;
    }
    if (decision->kind == ShimFaultKind::kCqeError) {
      wc[i].status = static_cast<ibv_wc_status>(decision->status);
      wc[i].vendor_err = 0;
    }
    if (errors < to_error.size()) to_error[errors++] = wc[i].qp_num;
  }
  // As a NIC does after a failed work request: the QP goes to error and flushes the rest.
  for (size_t i = 0; i < errors; ++i) moveQpToError(to_error[i]);
  if (delay_ms == 0) return got;
  hold(cq, wc, got, core::steadyNowNs() + delay_ms * 1'000'000);
  return 0;
}

int shimPollCq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  const Saved* saved = savedFor(cq->context);
  if (saved == nullptr) return -1;
  if (anyHeld()) {
    const int taken = takeHeld(cq, num_entries, wc, core::steadyNowNs());
    if (taken >= 0) return taken;  // held ones first; nothing newer overtakes them
  }
  const int got = saved->poll_cq(cq, num_entries, wc);
  if (got <= 0 || !faults().armed()) return got;
  return armedPoll(cq, got, wc);
}

ibv_qp* shimCreateQpEx(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  const Saved* saved = savedFor(context);
  if (saved == nullptr || saved->create_qp_ex == nullptr) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_qp* qp = saved->create_qp_ex(context, attr);
  registerQp(qp);
  return qp;
}

// The extended context's create_qp_ex slot, when the context is one and has the slot.
CreateQpEx* createQpExSlot(ibv_context* context) {
  verbs_context* extended = verbs_get_ctx_op(context, create_qp_ex);
  return extended != nullptr ? &extended->create_qp_ex : nullptr;
}

}  // namespace

Status interpose(ibv_context* context) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  if (savedFor(context) != nullptr) return Status::ok();
  for (size_t i = 0; i < g_saved.size(); ++i) {
    Saved& s = g_saved[i];
    if (s.context.load(std::memory_order_relaxed) != nullptr) continue;
    if (static_cast<int>(i) >= g_slots_used.load(std::memory_order_relaxed)) {
      g_slots_used.store(static_cast<int>(i) + 1, std::memory_order_release);
    }
    s.post_send = context->ops.post_send;
    s.post_recv = context->ops.post_recv;
    s.poll_cq = context->ops.poll_cq;
    CreateQpEx* create = createQpExSlot(context);
    s.create_qp_ex = create != nullptr ? *create : nullptr;
    s.context.store(context, std::memory_order_release);
    context->ops.post_send = shimPostSend;
    context->ops.post_recv = shimPostRecv;
    context->ops.poll_cq = shimPollCq;
    if (create != nullptr) *create = shimCreateQpEx;
    return Status::ok();
  }
  return Status(StatusCode::kUnavailable, "the verbs shim holds " + std::to_string(kMaxContexts) +
                                              " contexts already: this one runs without faults");
}

void release(ibv_context* context) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  for (Saved& s : g_saved) {
    if (s.context.load(std::memory_order_relaxed) != context) continue;
    context->ops.post_send = s.post_send;
    context->ops.post_recv = s.post_recv;
    context->ops.poll_cq = s.poll_cq;
    if (CreateQpEx* create = createQpExSlot(context); create != nullptr) *create = s.create_qp_ex;
    s.context.store(nullptr, std::memory_order_release);
  }
}

bool interposed(const ibv_context* context) { return savedFor(context) != nullptr; }

std::vector<std::string> interposedDevices() {
  std::vector<std::string> out;
  for (const Saved& s : g_saved) {
    const ibv_context* context = s.context.load(std::memory_order_acquire);
    if (context == nullptr) continue;
    const std::string name = deviceName(context);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

void arm(const std::vector<ShimFault>& faults_to_arm, uint64_t seed) {
  faults().arm(faults_to_arm, seed, nowMs());
}

void disarm() { faults().disarm(); }

std::vector<InjectionCount> injections() { return faults().injections(); }

int regMrFailure(ibv_pd* pd) {
  if (!faults().armed() || pd == nullptr) return 0;
  const ShimEventInfo event{deviceName(pd->context), std::nullopt, std::nullopt, std::nullopt};
  const auto decision = faults().decide(ShimEventType::kRegMr, event, nowMs());
  return decision ? decision->error : 0;
}

}  // namespace fabric_chaos::verbs_shim
