#pragma once
// The verbs shim's hold on a verbs context's data path. rdma-core 44 makes ibv_post_send,
// ibv_post_recv and ibv_poll_cq static inline calls through ctx->ops (verbs.h), so the only way
// to see an unmodified program's posts and completions is to replace those pointers in each
// context after the provider has filled them (the shim's ibv_open_device will call interpose()).
// The provider's originals are kept per context. Unarmed, a wrapper costs an atomic load and a
// scan of a small table before the provider's own call; armed, matching events go through the
// faults' triggers (verbs_shim/plan.h) under one mutex. Thread-safe.

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "verbs_shim/plan.h"

struct ibv_context;

namespace fabric_chaos::verbs_shim {

// Up to this many contexts at once; a program opens one per device it uses.
inline constexpr int kMaxContexts = 64;

// Replaces the context's post_send, post_recv and poll_cq with the shim's. A second call for the
// same context changes nothing; kUnavailable past kMaxContexts (the context is left as it was).
core::Status interpose(ibv_context* context);
// Puts the provider's ops back (the shim's ibv_close_device calls it first).
void release(ibv_context* context);
bool interposed(const ibv_context* context);

// The faults injected from now on, each trigger counting from this moment; arming replaces what
// was armed before. disarm() stops every injection at once.
void arm(const std::vector<ShimFault>& faults, uint64_t seed);
void disarm();

// Per armed fault, in arming order: matching events seen and injections made.
struct InjectionCount {
  ShimFaultKind kind = ShimFaultKind::kCqeError;
  int64_t seen = 0;
  int64_t fired = 0;
};
std::vector<InjectionCount> injections();

}  // namespace fabric_chaos::verbs_shim
