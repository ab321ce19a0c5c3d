#pragma once
// netem: delay (jitter, correlation, distribution), random or Gilbert-Elliott loss, duplication,
// corruption, reordering and rate on an interface's egress, all in one root netem qdisc. The
// root qdisc the user had is journalled by capture() byte for byte and re-created by revert(),
// so a tbf or fq_codel they configured comes back with the same handle and options; roots that
// cannot be rebuilt that way (children, classes, filters) are refused up front. Called from the
// engine's run thread; holds no state between calls.

#include <string>

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class Qdiscs;
}

namespace fabric_chaos::injectors {

class Netem : public Injector {
 public:
  static constexpr const char* kKind = "netem";

  // available/reason: what makeRegistry()'s probe of sch_netem said.
  Netem(sys::Qdiscs* qdiscs, bool available, std::string reason);

  const KindSpec& spec() const override;
  KindInfo info() const override;
  // See netemSpecFromParams() (netem_spec.h).
  core::Status validate(const json& params) const override;
  // priorJson() of the current root qdisc. kFailedPrecondition when that qdisc could not be
  // rebuilt after netem replaces it; kNotFound when the device does not exist.
  core::Result<json> capture(const Fault& fault) override;
  // Replaces the root with netem; applied again with other params it changes that netem in
  // place. Refuses, like capture(), a root it could not give back.
  core::Status apply(const Fault& fault) override;
  // Removes our netem and re-creates the prior root from its saved attributes. Idempotent and
  // resumable: a root already equal to the prior is left alone, a kernel default left by an
  // interrupted revert gets the prior back, a missing device counts as reverted, and a root that
  // is neither netem nor the prior (someone replaced it meanwhile) is not touched.
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"backend": "netem", "active", "kind", "handle", "packets", "bytes", "drops",
  //  "overlimits", "requeues", "qlen", "backlog", "options" (netem only, params' vocabulary)}.
  core::Result<json> observe(const Fault& fault) override;

 private:
  // The interface the fault acts on, once the target is one and an adapter is there.
  core::Result<InterfaceTarget> checkUsable(const Fault& fault) const;

  sys::Qdiscs* qdiscs_;
  bool available_;
  std::string reason_;
};

}  // namespace fabric_chaos::injectors
