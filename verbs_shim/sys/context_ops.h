#pragma once
// The verbs shim's hold on a verbs context's data path. rdma-core 44 makes ibv_post_send,
// ibv_post_recv and ibv_poll_cq static inline calls through ctx->ops (verbs.h), so the only way
// to see an unmodified program's posts and completions is to replace those pointers in each
// context after the provider has filled them (the shim's ibv_open_device calls interpose()); the
// extended context's create_qp_ex is replaced too, so that QPs made through ibv_create_qp_ex are
// known by number (verbs_shim/sys/qp_registry.h). The provider's originals are kept per context.
// Unarmed, a wrapper costs two relaxed loads and a scan of a small table before the provider's
// own call; armed, each event goes to the armed faults (verbs_shim/armed_faults.h), and:
// - post_*_fail: the post returns the errno, the request reported as bad, never posted;
// - qp_error: the QP of the post or completion is moved to the error state;
// - cqe_error: the completion's status replaced, then its QP moved to the error state;
// - completion_delay: the poll's whole batch held back (verbs_shim/sys/held_completions.h).
// Thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "verbs_shim/armed_faults.h"
#include "verbs_shim/plan.h"

struct ibv_context;
struct ibv_pd;

namespace fabric_chaos::verbs_shim {

// Up to this many contexts at once; a program opens one per device it uses.
inline constexpr int kMaxContexts = 64;

// Replaces the context's post_send, post_recv and poll_cq (and create_qp_ex) with the shim's.
// A second call for the same context changes nothing; kUnavailable past kMaxContexts (the
// context is left as it was).
core::Status interpose(ibv_context* context);
// Puts the provider's ops back (the shim's ibv_close_device calls it first).
void release(ibv_context* context);
bool interposed(const ibv_context* context);
// The devices of the interposed contexts, once each: the status answer's "devices".
std::vector<std::string> interposedDevices();

// The faults injected from now on, each trigger counting from this moment; arming replaces what
// was armed before. disarm() stops every injection at once (held completions still come out on
// time).
void arm(const std::vector<ShimFault>& faults, uint64_t seed);
void disarm();
std::vector<InjectionCount> injections();

// reg_mr_fail: the errno a registration on `pd` must fail with now, or 0.
int regMrFailure(ibv_pd* pd);

}  // namespace fabric_chaos::verbs_shim
