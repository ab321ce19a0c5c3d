#pragma once
// pfc_storm: a long-running fault. apply starts `<self_exe> pfc-emit` inside the target's
// namespace (an AF_PACKET sender of 802.1Qbb frames, app/pfc_emit_cmd.cc) as an emitter
// (injectors/sys/emitters.h); revert stops it, which sends one XON frame first unless
// xon_on_stop is false; observe returns its health and its last report (frames sent, gaps).
// Start-up recovery stops a stray emitter through the emitters' records, by the same key.

#include <string>
#include <vector>

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class Emitters;
class LinkControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class PfcStorm : public Injector {
 public:
  static constexpr const char* kKind = "pfc_storm";
  // How long a revert lets the emitter send its XON frame and last report before SIGKILL.
  static constexpr int kStopGraceMs = 1000;

  PfcStorm(sys::LinkControl* links, sys::Emitters* emitters, std::string self_exe)
      : links_(links), emitters_(emitters), self_exe_(std::move(self_exe)) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  // The schema, then checkPfcStormParams.
  core::Status validate(const json& params) const override;
  // Checks that the interface exists; the prior is {} (nothing of the system changes).
  core::Result<json> capture(const Fault& fault) override;
  // Starts the emitter; one already running for this target is left as it is.
  core::Status apply(const Fault& fault) override;
  // Stops the emitter, including one a crashed incarnation left (found by its record).
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"running", "pid", "exit_code"?, "report": the emitter's last JSON report, "log"?}
  core::Result<json> observe(const Fault& fault) override;

  // The emitter's key and command line for one fault: pure, for tests.
  static std::string emitterKey(const InterfaceTarget& target);
  static std::vector<std::string> emitterArgv(const std::string& self_exe,
                                              const InterfaceTarget& target, const json& params);

 private:
  sys::LinkControl* links_;
  sys::Emitters* emitters_;
  std::string self_exe_;
};

}  // namespace fabric_chaos::injectors
