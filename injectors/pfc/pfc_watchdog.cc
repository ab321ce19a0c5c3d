#include "injectors/pfc/pfc_watchdog.h"

#include "injectors/model/pfc_watchdog_spec.h"
#include "injectors/sys/pfc_switch_control.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

json watchdogJson(const std::optional<PfcWatchdogConfig>& watchdog) {
  return {{"watchdog", watchdog ? json(formatPfcWatchdog(*watchdog)) : json(nullptr)}};
}

}  // namespace

const KindSpec& PfcWatchdog::spec() const { return pfcWatchdogSpec(); }

KindInfo PfcWatchdog::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = switches_ != nullptr;
  info.backend = "lab_switch";
  if (!info.available) info.reason = "no lab switch adapter in this agent";
  return info;
}

Status PfcWatchdog::validate(const json& params) const { return checkParams(spec(), params); }

core::Result<json> PfcWatchdog::capture(const Fault& fault) {
  auto target = requireInterface(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (switches_ == nullptr) return Status(StatusCode::kNotSupported, info().reason);
  auto settings = switches_->read(target->netns, target->ifname);
  if (!settings.isOk()) {
    if (settings.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kNotSupported,
                    "pfc_watchdog acts on a lab switch port with a PFC agent (lab up --pfc): " +
                        settings.status().message());
    }
    return settings.status().withContext("pfc_watchdog capture");
  }
  return watchdogJson(settings->watchdog);
}

Status PfcWatchdog::apply(const Fault& fault) {
  auto target = requireInterface(kKind, fault.target);
  if (!target.isOk()) return target.status();
  FC_RETURN_IF_ERROR(validate(fault.params));
  if (switches_ == nullptr) return Status(StatusCode::kNotSupported, info().reason);
  return switches_->setWatchdog(target->netns, target->ifname, pfcWatchdogFromParams(fault.params))
      .withContext("pfc_watchdog on " + describe(fault));
}

Status PfcWatchdog::revert(const Fault& fault, const json& prior) {
  auto target = requireInterface(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (!prior.is_object() || !prior.contains("watchdog")) return Status::ok();  // nothing captured
  if (switches_ == nullptr) return Status(StatusCode::kNotSupported, info().reason);
  std::optional<PfcWatchdogConfig> watchdog;
  if (prior["watchdog"].is_string()) {
    auto parsed = parsePfcWatchdog(prior["watchdog"].get<std::string>());
    if (!parsed.isOk()) return parsed.status().withContext("pfc_watchdog revert: the prior");
    watchdog = *parsed;
  }
  return switches_->setWatchdog(target->netns, target->ifname, watchdog)
      .withContext("pfc_watchdog revert on " + describe(fault));
}

core::Result<json> PfcWatchdog::observe(const Fault& fault) { return capture(fault); }

}  // namespace fabric_chaos::injectors
