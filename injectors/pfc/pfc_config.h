#pragma once
// pfc_config: lossless misconfiguration (injectors/model/pfc_config_spec.h). An instant kind with
// two backends, chosen per target at capture and recorded in the prior so that revert uses the
// same one:
// - a port of a lab switch whose PFC agent runs (lab up --pfc): the agent's per-port PFC enable
//   mask (injectors/sys/pfc_switch_control.h); a priority taken off is no longer paused by the
//   frames the port receives;
// - any other interface: IEEE DCB over rtnetlink (injectors/sys/dcb.h), the NIC's pfc_en bitmap.
//   The whole struct ieee_pfc is captured and written back on revert. veth and virtio-net have no
//   DCB: kNotSupported with the kernel's answer.

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class Dcb;
class PfcSwitchControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class PfcConfig : public Injector {
 public:
  static constexpr const char* kKind = "pfc_config";

  PfcConfig(sys::Dcb* dcb, sys::PfcSwitchControl* switches) : dcb_(dcb), switches_(switches) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // {"backend": "lab_switch", "pfc_enabled": mask} or {"backend": "dcb", "pfc_cap", "pfc_en",
  // "mbc", "delay"}.
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  core::Status revert(const Fault& fault, const json& prior) override;
  // The capture's form, as it is now.
  core::Result<json> observe(const Fault& fault) override;

 private:
  sys::Dcb* dcb_;
  sys::PfcSwitchControl* switches_;
};

}  // namespace fabric_chaos::injectors
