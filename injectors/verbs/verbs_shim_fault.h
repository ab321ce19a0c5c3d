#pragma once
// verbs_cqe_error, verbs_qp_error, verbs_post_fail, verbs_completion_delay and
// verbs_reg_mr_fail (injectors/model/verbs_fault_specs.h): the fault armed, through their
// control sockets (injectors/sys/verbs_shim_channel.h), in the running programs of this host
// that loaded the verbs shim and match the process target (a pid, a rank, a name, or all).
// - capture: the matching programs' pids; none is kFailedPrecondition listing those there are.
// - apply: every matching program armed, or none: when one refuses, the ones already armed are
//   disarmed again. The shims' leases (kLeaseMs) are then renewed by the lease keeper, so an
//   agent that dies leaves nothing armed for longer than that.
// - revert: no more renewals, and every program of the capture (and of the apply) disarmed; one
//   that has exited took its faults with it. Idempotent.
// A program is armed by one fault at a time: another verbs fault holding it is refused.
// Called from the engine's run thread and start-up recovery.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "injectors/injector.h"
#include "injectors/model/verbs_fault_specs.h"
#include "injectors/sys/verbs_shim_channel.h"
#include "injectors/verbs/shim_lease_keeper.h"

namespace fabric_chaos::injectors {

// The trigger's seed of the fault with this key (faultKey): the same fault draws the same
// injections on every run. Below 2^63, as the control protocol reads it.
uint64_t shimSeedOf(const std::string& fault_key);

// Whether the program is one the target names (any, for an every-process target).
bool targetMatches(const ProcessTarget& target, const sys::ShimProcess& process);

class VerbsShimFault : public Injector {
 public:
  // How long an armed shim stays armed without a renewal; the keeper renews every third of it.
  static constexpr int64_t kLeaseMs = 5000;

  // `channel` null leaves the kind unavailable. `leases` is shared by the five kinds, so that a
  // program held by one is known to the others.
  VerbsShimFault(VerbsFaultKind kind, sys::VerbsShimChannel* channel,
                 std::shared_ptr<ShimLeaseKeeper> leases)
      : kind_(kind), channel_(channel), leases_(std::move(leases)) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // {"pids": [...]}
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"processes": [{"pid", "comm", "rank" (null when unknown), "armed": [{"kind", "seen",
  //  "fired"}...]}]}: the programs this fault holds, as their shims report them now.
  core::Result<json> observe(const Fault& fault) override;

 private:
  core::Result<ProcessTarget> targetOf(const Fault& fault) const;
  core::Status usable() const;
  // The programs the target names; kFailedPrecondition listing the ones there are when none.
  core::Result<std::vector<sys::ShimProcess>> matching(const ProcessTarget& target);

  VerbsFaultKind kind_;
  sys::VerbsShimChannel* channel_;
  std::shared_ptr<ShimLeaseKeeper> leases_;
};

}  // namespace fabric_chaos::injectors
