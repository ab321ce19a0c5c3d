#include "injectors/pfc/pfc_config.h"

#include "injectors/model/pfc_config_spec.h"
#include "injectors/sys/dcb.h"
#include "injectors/sys/pfc_switch_control.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

constexpr char kLabSwitch[] = "lab_switch";
constexpr char kDcb[] = "dcb";

core::Result<InterfaceTarget> checkTarget(const Fault& fault) {
  auto target = requireInterface(PfcConfig::kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (target->ifname.empty())
    return Status(StatusCode::kInvalidArgument, "target.ifname: required");
  return target;
}

json dcbJson(const sys::IeeePfc& pfc) {
  return {{"backend", kDcb},
          {"pfc_cap", pfc.pfc_cap},
          {"pfc_en", pfc.pfc_en},
          {"mbc", pfc.mbc},
          {"delay", pfc.delay}};
}

}  // namespace

const KindSpec& PfcConfig::spec() const { return pfcConfigSpec(); }

KindInfo PfcConfig::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = dcb_ != nullptr || switches_ != nullptr;
  info.backend = "dcb_netlink, lab_switch";
  if (!info.available) info.reason = "no DCB or lab switch adapter in this agent";
  return info;
}

Status PfcConfig::validate(const json& params) const {
  FC_RETURN_IF_ERROR(checkParams(spec(), params));
  return checkPfcConfigParams(params);
}

core::Result<json> PfcConfig::capture(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  // A port of a running lab switch agent; anything else goes to DCB.
  if (switches_ != nullptr) {
    if (auto settings = switches_->read(target->netns, target->ifname); settings.isOk()) {
      return json{{"backend", kLabSwitch}, {"pfc_enabled", settings->pfc_enabled}};
    }
  }
  if (dcb_ == nullptr) {
    return Status(StatusCode::kNotSupported, "pfc_config: " + describe(fault) +
                                                 " is not a lab switch port and this agent has "
                                                 "no DCB adapter");
  }
  auto pfc = dcb_->getIeeePfc(target->netns, target->ifname);
  if (!pfc.isOk()) {
    if (pfc.status().code() == StatusCode::kNotSupported) {
      return Status(StatusCode::kNotSupported,
                    pfc.status().message() +
                        "; on a lab, pfc_config acts on the switch side of a link, whose PFC "
                        "agent (lab up --pfc) has a per-port enable mask");
    }
    return pfc.status().withContext("pfc_config capture");
  }
  return dcbJson(*pfc);
}

Status PfcConfig::apply(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  FC_RETURN_IF_ERROR(validate(fault.params));
  auto now = capture(fault);
  if (!now.isOk()) return now.status();
  if ((*now)["backend"] == kLabSwitch) {
    const uint8_t mask = pfcConfigMask((*now)["pfc_enabled"].get<uint8_t>(), fault.params);
    return switches_->setPfcEnabled(target->netns, target->ifname, mask)
        .withContext("pfc_config on " + describe(fault));
  }
  sys::IeeePfc pfc;
  pfc.pfc_cap = (*now)["pfc_cap"].get<uint8_t>();
  pfc.mbc = (*now)["mbc"].get<uint8_t>();
  pfc.delay = (*now)["delay"].get<uint16_t>();
  pfc.pfc_en = pfcConfigMask((*now)["pfc_en"].get<uint8_t>(), fault.params);
  FC_RETURN_IF_ERROR(dcb_->setIeeePfc(target->netns, target->ifname, pfc)
                         .withContext("pfc_config on " + describe(fault)));
  // A driver with DCB ops but no ieee_setpfc is answered with success and keeps its setting:
  // only reading it back tells.
  auto after = dcb_->getIeeePfc(target->netns, target->ifname);
  if (!after.isOk())
    return after.status().withContext("pfc_config: reading back " + describe(fault));
  if (after->pfc_en != pfc.pfc_en) {
    return Status(StatusCode::kNotSupported, "pfc_config: " + describe(fault) +
                                                 " accepted pfc_en " + std::to_string(pfc.pfc_en) +
                                                 " but kept " + std::to_string(after->pfc_en) +
                                                 " (its driver does not set IEEE PFC)");
  }
  return Status::ok();
}

Status PfcConfig::revert(const Fault& fault, const json& prior) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (!prior.is_object() || !prior.contains("backend")) return Status::ok();  // nothing captured
  if (prior["backend"] == kLabSwitch) {
    if (switches_ == nullptr) return Status(StatusCode::kNotSupported, "no lab switch adapter");
    return switches_
        ->setPfcEnabled(target->netns, target->ifname, prior.value("pfc_enabled", uint8_t{0xff}))
        .withContext("pfc_config revert on " + describe(fault));
  }
  if (dcb_ == nullptr) return Status(StatusCode::kNotSupported, "no DCB adapter");
  sys::IeeePfc pfc;
  pfc.pfc_cap = prior.value("pfc_cap", uint8_t{0});
  pfc.pfc_en = prior.value("pfc_en", uint8_t{0});
  pfc.mbc = prior.value("mbc", uint8_t{0});
  pfc.delay = prior.value("delay", uint16_t{0});
  return dcb_->setIeeePfc(target->netns, target->ifname, pfc)
      .withContext("pfc_config revert on " + describe(fault));
}

core::Result<json> PfcConfig::observe(const Fault& fault) { return capture(fault); }

}  // namespace fabric_chaos::injectors
