#include "verbs_shim/sys/context_ops.h"

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <mutex>

#include "core/clock.h"

namespace fabric_chaos::verbs_shim {
namespace {

using core::Status;
using core::StatusCode;

using PostSend = int (*)(ibv_qp*, ibv_send_wr*, ibv_send_wr**);
using PostRecv = int (*)(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
using PollCq = int (*)(ibv_cq*, int, ibv_wc*);

// One interposed context: its provider's ops, published by a release store of `context` after
// they are written, so that a wrapper that finds the context also finds them.
struct Saved {
  std::atomic<ibv_context*> context{nullptr};
  PostSend post_send = nullptr;
  PostRecv post_recv = nullptr;
  PollCq poll_cq = nullptr;
};

std::array<Saved, kMaxContexts> g_saved;
std::mutex g_table_mutex;  // writers of g_saved

struct ArmedFault {
  ShimFault fault;
  TriggerState trigger;
};
std::atomic<bool> g_armed{false};
std::mutex g_armed_mutex;  // g_faults, g_armed_at_ns, the triggers' state
std::vector<ArmedFault> g_faults;
int64_t g_armed_at_ns = 0;

const Saved* savedFor(const ibv_context* context) {
  for (const Saved& s : g_saved) {
    if (s.context.load(std::memory_order_acquire) == context) return &s;
  }
  return nullptr;
}

bool matches(const ShimFilter& filter, const ibv_context* context, uint32_t qp_num) {
  if (filter.qp_num && *filter.qp_num != qp_num) return false;
  if (!filter.device.empty() &&
      (context->device == nullptr || filter.device != context->device->name)) {
    return false;
  }
  return true;
}

int64_t elapsedMsLocked() { return (core::steadyNowNs() - g_armed_at_ns) / 1'000'000; }

// The errno a post must fail with now, or 0. Caller holds nothing.
int postFailure(ShimFaultKind kind, ibv_qp* qp) {
  if (!g_armed.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> lock(g_armed_mutex);
  const int64_t elapsed = elapsedMsLocked();
  for (ArmedFault& armed : g_faults) {
    if (armed.fault.kind != kind || !matches(armed.fault.filter, qp->context, qp->qp_num)) {
      continue;
    }
    if (armed.trigger.fire(elapsed)) return armed.fault.error;
  }
  return 0;
}

int shimPostSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  const Saved* saved = savedFor(qp->context);
  if (saved == nullptr) return EINVAL;  // released while a post was on its way in
  if (const int error = postFailure(ShimFaultKind::kPostSendFail, qp); error != 0) {
    *bad_wr = wr;
    return error;
  }
  return saved->post_send(qp, wr, bad_wr);
}

int shimPostRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const Saved* saved = savedFor(qp->context);
  if (saved == nullptr) return EINVAL;
  if (const int error = postFailure(ShimFaultKind::kPostRecvFail, qp); error != 0) {
    *bad_wr = wr;
    return error;
  }
  return saved->post_recv(qp, wr, bad_wr);
}

int shimPollCq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  const Saved* saved = savedFor(cq->context);
  if (saved == nullptr) return -1;
  const int got = saved->poll_cq(cq, num_entries, wc);
  if (got <= 0 || !g_armed.load(std::memory_order_relaxed)) return got;
  std::lock_guard<std::mutex> lock(g_armed_mutex);
  const int64_t elapsed = elapsedMsLocked();
  for (int i = 0; i < got; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) continue;
    for (ArmedFault& armed : g_faults) {
      if (armed.fault.kind != ShimFaultKind::kCqeError ||
          !matches(armed.fault.filter, cq->context, wc[i].qp_num)) {
        continue;
      }
      if (armed.trigger.fire(elapsed)) {
        wc[i].status = static_cast<ibv_wc_status>(armed.fault.status);
        wc[i].vendor_err = 0;
        break;
      }
    }
  }
  return got;
}

}  // namespace

Status interpose(ibv_context* context) {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  if (savedFor(context) != nullptr) return Status::ok();
  for (Saved& s : g_saved) {
    if (s.context.load(std::memory_order_relaxed) != nullptr) continue;
    s.post_send = context->ops.post_send;
    s.post_recv = context->ops.post_recv;
    s.poll_cq = context->ops.poll_cq;
    s.context.store(context, std::memory_order_release);
    context->ops.post_send = shimPostSend;
    context->ops.post_recv = shimPostRecv;
    context->ops.poll_cq = shimPollCq;
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
    s.context.store(nullptr, std::memory_order_release);
  }
}

bool interposed(const ibv_context* context) { return savedFor(context) != nullptr; }

void arm(const std::vector<ShimFault>& faults, uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_armed_mutex);
  g_faults.clear();
  for (size_t i = 0; i < faults.size(); ++i) {
    g_faults.push_back({faults[i], TriggerState(faults[i].trigger, seed + i)});
  }
  g_armed_at_ns = core::steadyNowNs();
  g_armed.store(!g_faults.empty(), std::memory_order_relaxed);
}

void disarm() {
  std::lock_guard<std::mutex> lock(g_armed_mutex);
  g_armed.store(false, std::memory_order_relaxed);
  g_faults.clear();
}

std::vector<InjectionCount> injections() {
  std::lock_guard<std::mutex> lock(g_armed_mutex);
  std::vector<InjectionCount> out;
  for (const ArmedFault& armed : g_faults) {
    out.push_back({armed.fault.kind, armed.trigger.seen(), armed.trigger.fired()});
  }
  return out;
}

}  // namespace fabric_chaos::verbs_shim
