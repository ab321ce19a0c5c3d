#pragma once
// The verbs shim kinds' declarations (injectors/model/kind_spec.h, docs/faults.md): faults armed
// in running RDMA programs that loaded the verbs shim (verbs_shim/plan.h), each on a process
// target. Arming a process replaces what was armed there, so each kind holds the process's
// "verbs_shim" exclusively. Each kind's own knob, then the filters (which QP, transport, opcode)
// and the trigger (probability, every Nth, after a while, at most count times), and the pure
// translation of checked parameters to the fault the shim is sent. Pure; safe from any thread.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "injectors/model/kind_spec.h"
#include "verbs_shim/plan.h"

namespace fabric_chaos::injectors {

enum class VerbsFaultKind {
  kCqeError,         // verbs_cqe_error
  kQpError,          // verbs_qp_error
  kPostFail,         // verbs_post_fail (ibv_post_send or ibv_post_recv, by `op`)
  kCompletionDelay,  // verbs_completion_delay
  kRegMrFail,        // verbs_reg_mr_fail
};
inline constexpr std::array<VerbsFaultKind, 5> kVerbsFaultKinds = {
    VerbsFaultKind::kCqeError, VerbsFaultKind::kQpError, VerbsFaultKind::kPostFail,
    VerbsFaultKind::kCompletionDelay, VerbsFaultKind::kRegMrFail};

const KindSpec& verbsFaultSpec(VerbsFaultKind kind);
// nullopt for kinds that are not verbs shim kinds.
std::optional<VerbsFaultKind> verbsFaultKindOf(std::string_view kind);

// The shim fault that `params` (checked by checkParams, then withDefaults) of `kind` describe.
// kInvalidArgument naming the parameter for the rules between parameters (verbs_post_fail's
// op "send" with opcode "recv": ibv_post_send never sees receives), and naming the kind when it
// is not a verbs shim kind.
core::Result<verbs_shim::ShimFault> shimFaultOf(const std::string& kind, const json& params);

}  // namespace fabric_chaos::injectors
