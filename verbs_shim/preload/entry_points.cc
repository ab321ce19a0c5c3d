// The verbs fault library's entry points (docs/verbs-faults.md), in both of its forms:
// - libfabric-chaos-verbs.so, loaded with LD_PRELOAD ahead of libibverbs: these functions take
//   the place of libibverbs' own for every caller, and reach the real ones with dlsym RTLD_NEXT
//   (verbs_shim/preload/real_next.cc);
// - libfabric-chaos-ibverbs.so, opened instead of libibverbs (NCCL_IBVERBS_LIB): these functions
//   carry libibverbs' version nodes, every other libibverbs function is forwarded as it is
//   (verbs_shim/forward/), and the real ones come from the real library by dlvsym
//   (verbs_shim/forward/real_forward.cc).
// Each calls the real one around the shim's own work:
// - ibv_open_device / ibv_close_device: the context's data-path ops interposed and released
//   (verbs_shim/sys/context_ops.h), which is how inline ibv_post_send and ibv_poll_cq are seen;
// - ibv_create_qp / ibv_destroy_qp: QPs known by number, so that errors can move them to error;
// - ibv_reg_mr and its iova forms: reg_mr_fail;
// - ibv_get_cq_event / ibv_ack_cq_events / ibv_destroy_cq: completion_delay's held batches wake a
//   program that sleeps on its completion channel (verbs_shim/sys/held_completions.h).
// With FABRIC_CHAOS_VERBS_DIR set, a control server (verbs_shim/sys/control_server.h) starts at
// load in that directory; without it, or when it cannot start, the program runs as without the
// shim unless FABRIC_CHAOS_VERBS_FAULTS arms faults at load: a JSON array of faults
// (verbs_shim/plan.h), armed with no lease until an agent disarms them or the program ends (the
// way to fail a program's first registrations, made before any agent could reach it). Nothing
// here blocks the program on the control channel.

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "verbs_shim/preload/real_verbs.h"
#include "verbs_shim/sys/context_ops.h"
#include "verbs_shim/sys/control_server.h"
#include "verbs_shim/sys/held_completions.h"
#include "verbs_shim/sys/qp_registry.h"
#include "verbs_shim/sys/shim_control.h"

// verbs.h turns these into inline helpers; the exported functions are what we define.
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace {

namespace shim = fabric_chaos::verbs_shim;

template <typename F>
F realFunction(const char* name, const char* version) {
  return reinterpret_cast<F>(shim::realVerbsSymbol(name, version));
}

// The real function, found once; a libibverbs without it makes the call fail as ENOSYS.
// `version`: the libibverbs version node of the function (rdma-core 44), which the forwarding
// form looks it up by and exports it under; the preload form takes whatever comes next.
#define FC_REAL(name, version) \
  static const auto real = realFunction<decltype(&::name)>(#name, version)

// An entry point's own name: libibverbs' name in the LD_PRELOAD form; in the forwarding form a
// name of ours, exported as libibverbs' name under its version node (FC_ENTRY_VERSION, next to
// the definition, as .symver requires), so that dlvsym(handle, name, version) finds it.
#ifdef FC_VERBS_FORWARDER
#define FC_ENTRY(name) fc_entry_##name
#define FC_ENTRY_VERSION(name, version) __asm__(".symver fc_entry_" #name ", " #name "@@" version);
#else
#define FC_ENTRY(name) name
#define FC_ENTRY_VERSION(name, version)
#endif

std::string processName() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// One registration the program makes can reach the shim twice: libibverbs' ibv_reg_mr calls its
// own ibv_reg_mr_iova2 through its PLT, which the preload form defines too. Only the outermost
// call is an event, so that a trigger's every_nth and count mean registrations.
thread_local bool t_registering = false;

template <typename Real, typename... Args>
ibv_mr* registerThroughShim(Real real, ibv_pd* pd, Args... args) {
  if (real == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  if (t_registering) return real(pd, args...);
  if (const int error = shim::regMrFailure(pd); error != 0) {
    errno = error;
    return nullptr;
  }
  t_registering = true;
  ibv_mr* mr = real(pd, args...);
  t_registering = false;
  return mr;
}

struct Runtime {
  std::unique_ptr<shim::ShimControl> control;
  std::unique_ptr<shim::ControlServer> server;
};
Runtime* g_runtime = nullptr;

// FABRIC_CHAOS_VERBS_FAULTS, when set: armed now, or refused whole with the reason.
void armFromEnvironment() {
  const char* text = std::getenv("FABRIC_CHAOS_VERBS_FAULTS");
  if (text == nullptr || *text == '\0') return;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  std::vector<shim::ShimFault> faults;
  std::string problem = doc.is_array() && !doc.empty() ? "" : "must be a non-empty JSON array";
  for (size_t i = 0; problem.empty() && i < doc.size(); ++i) {
    auto fault = shim::shimFaultFromJson(doc[i]);
    if (!fault.isOk()) {
      problem = "[" + std::to_string(i) + "]." + fault.status().message();
    } else {
      faults.push_back(*fault);
    }
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "fabric-chaos verbs shim: FABRIC_CHAOS_VERBS_FAULTS%s%s; nothing armed\n",
                 problem[0] == '[' ? "" : ": ", problem.c_str());
    return;
  }
  shim::arm(faults, 1);
}

__attribute__((constructor)) void startShim() {
  armFromEnvironment();
  const char* dir = std::getenv("FABRIC_CHAOS_VERBS_DIR");
  if (dir == nullptr || *dir == '\0') return;
  mkdir(dir, 0700);  // the agent makes it; a user's own run may not have
  auto runtime = std::make_unique<Runtime>();
  runtime->control = std::make_unique<shim::ShimControl>(
      processName(),
      shim::rankFromEnvironment([](const char* name) -> const char* { return std::getenv(name); }));
  auto server = shim::ControlServer::start(dir, *runtime->control);
  if (!server.isOk()) {
    std::fprintf(stderr, "fabric-chaos verbs shim: %s; verbs faults cannot be armed here\n",
                 server.status().message().c_str());
    return;
  }
  runtime->server = std::move(*server);
  g_runtime = runtime.release();
}

__attribute__((destructor)) void stopShim() {
  if (g_runtime == nullptr) return;
  g_runtime->server.reset();  // disarms, removes the socket
  delete g_runtime;
  g_runtime = nullptr;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ibv_context* FC_ENTRY(ibv_open_device)(ibv_device* device) {
  FC_REAL(ibv_open_device, "IBVERBS_1.1");
  if (real == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  ibv_context* context = real(device);
  if (context != nullptr) {
    const auto held = shim::interpose(context);
    if (!held.isOk()) std::fprintf(stderr, "fabric-chaos verbs shim: %s\n", held.message().c_str());
  }
  return context;
}
FC_ENTRY_VERSION(ibv_open_device, "IBVERBS_1.1")

__attribute__((visibility("default"))) int FC_ENTRY(ibv_close_device)(ibv_context* context) {
  FC_REAL(ibv_close_device, "IBVERBS_1.1");
  shim::release(context);
  return real != nullptr ? real(context) : ENOSYS;
}
FC_ENTRY_VERSION(ibv_close_device, "IBVERBS_1.1")

__attribute__((visibility("default"))) ibv_qp* FC_ENTRY(ibv_create_qp)(ibv_pd* pd,
                                                                       ibv_qp_init_attr* attr) {
  FC_REAL(ibv_create_qp, "IBVERBS_1.1");
  if (real == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  ibv_qp* qp = real(pd, attr);
  shim::registerQp(qp);
  return qp;
}
FC_ENTRY_VERSION(ibv_create_qp, "IBVERBS_1.1")

__attribute__((visibility("default"))) int FC_ENTRY(ibv_destroy_qp)(ibv_qp* qp) {
  FC_REAL(ibv_destroy_qp, "IBVERBS_1.1");
  shim::unregisterQp(qp);
  return real != nullptr ? real(qp) : ENOSYS;
}
FC_ENTRY_VERSION(ibv_destroy_qp, "IBVERBS_1.1")

__attribute__((visibility("default"))) ibv_mr* FC_ENTRY(ibv_reg_mr)(ibv_pd* pd, void* addr,
                                                                    size_t length, int access) {
  FC_REAL(ibv_reg_mr, "IBVERBS_1.1");
  return registerThroughShim(real, pd, addr, length, access);
}
FC_ENTRY_VERSION(ibv_reg_mr, "IBVERBS_1.1")

__attribute__((visibility("default"))) ibv_mr* FC_ENTRY(ibv_reg_mr_iova)(ibv_pd* pd, void* addr,
                                                                         size_t length,
                                                                         uint64_t iova,
                                                                         int access) {
  FC_REAL(ibv_reg_mr_iova, "IBVERBS_1.7");
  return registerThroughShim(real, pd, addr, length, iova, access);
}
FC_ENTRY_VERSION(ibv_reg_mr_iova, "IBVERBS_1.7")

__attribute__((visibility("default"))) ibv_mr* FC_ENTRY(ibv_reg_mr_iova2)(ibv_pd* pd, void* addr,
                                                                          size_t length,
                                                                          uint64_t iova,
                                                                          unsigned int access) {
  FC_REAL(ibv_reg_mr_iova2, "IBVERBS_1.8");
  return registerThroughShim(real, pd, addr, length, iova, access);
}
FC_ENTRY_VERSION(ibv_reg_mr_iova2, "IBVERBS_1.8")

// A program asleep on its channel while one of its CQs holds a batch is woken when the batch
// falls due, with that CQ as the event; a kernel event that comes first is returned as usual.
// On a non-blocking channel a due batch is returned at once, and otherwise the kernel answers.
__attribute__((visibility("default"))) int FC_ENTRY(ibv_get_cq_event)(ibv_comp_channel* channel,
                                                                      ibv_cq** cq,
                                                                      void** cq_context) {
  FC_REAL(ibv_get_cq_event, "IBVERBS_1.1");
  if (real == nullptr) return -1;
  while (shim::anyHeld()) {
    const auto due = shim::nextDue(channel);
    if (!due) break;
    const int64_t wait_ns = due->release_ns - fabric_chaos::core::steadyNowNs();
    if (wait_ns > 0) {
      // Asked only here, so that a program with nothing held pays no system call for it.
      const bool blocking = (fcntl(channel->fd, F_GETFL) & O_NONBLOCK) == 0;
      if (!blocking) break;
      pollfd ready{channel->fd, POLLIN, 0};
      const int timeout_ms = static_cast<int>(wait_ns / 1'000'000) + 1;
      if (poll(&ready, 1, timeout_ms) != 0) break;  // the kernel has an event (or an error)
      continue;
    }
    shim::noteSyntheticEvent(due->cq);
    *cq = due->cq;
    *cq_context = due->cq->cq_context;
    return 0;
  }
  return real(channel, cq, cq_context);
}
FC_ENTRY_VERSION(ibv_get_cq_event, "IBVERBS_1.1")

__attribute__((visibility("default"))) void FC_ENTRY(ibv_ack_cq_events)(ibv_cq* cq,
                                                                        unsigned int nevents) {
  FC_REAL(ibv_ack_cq_events, "IBVERBS_1.1");
  // libibverbs counts acknowledgements against the kernel's events, and ibv_destroy_cq waits
  // until they agree: the shim's own events are taken out.
  const unsigned int kernel = shim::kernelAcks(cq, nevents);
  if (kernel > 0 && real != nullptr) real(cq, kernel);
}
FC_ENTRY_VERSION(ibv_ack_cq_events, "IBVERBS_1.1")

__attribute__((visibility("default"))) int FC_ENTRY(ibv_destroy_cq)(ibv_cq* cq) {
  FC_REAL(ibv_destroy_cq, "IBVERBS_1.1");
  shim::forgetCq(cq);
  return real != nullptr ? real(cq) : ENOSYS;
}
FC_ENTRY_VERSION(ibv_destroy_cq, "IBVERBS_1.1")

}  // extern "C"
