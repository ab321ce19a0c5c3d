#pragma once
// pfc_watchdog: the PFC watchdog of one lab switch port for the step's window
// (injectors/model/pfc_watchdog_spec.h), set through the switch's PFC agent
// (injectors/sys/pfc_switch_control.h). An instant kind: capture reads the port's watchdog, revert
// writes it back. Only lab switches: a real switch's watchdog is its own configuration (SONiC
// `pfcwd`), which this kind does not reach.

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class PfcSwitchControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class PfcWatchdog : public Injector {
 public:
  static constexpr const char* kKind = "pfc_watchdog";

  explicit PfcWatchdog(sys::PfcSwitchControl* switches) : switches_(switches) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // {"watchdog": "drop:200:200"} or {"watchdog": null}.
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  core::Status revert(const Fault& fault, const json& prior) override;
  core::Result<json> observe(const Fault& fault) override;

 private:
  sys::PfcSwitchControl* switches_;
};

}  // namespace fabric_chaos::injectors
