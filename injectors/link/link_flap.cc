#include "injectors/link/link_flap.h"

#include <cstdint>

#include "injectors/model/link_flap_spec.h"
#include "injectors/sys/links.h"

namespace fabric_chaos::injectors {
namespace {

core::Status invalid(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, param + ": " + problem);
}

// The interface the fault acts on; refused before any system call when it is not one.
core::Result<InterfaceTarget> checkTarget(const Fault& fault) {
  auto target = requireInterface(LinkFlap::kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (target->ifname.empty()) return invalid("target.ifname", "required");
  return target;
}

}  // namespace

const KindSpec& LinkFlap::spec() const { return linkFlapSpec(); }

KindInfo LinkFlap::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = links_ != nullptr;
  info.backend = "netlink";
  if (!info.available) info.reason = "no link adapter";
  return info;
}

core::Status LinkFlap::validate(const json& params) const { return checkParams(spec(), params); }

core::Result<json> LinkFlap::capture(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  auto link = links_->getLink(target->netns, target->ifname);
  if (!link.isOk()) return link.status().withContext("link_flap capture");
  return json{{"admin_up", link->admin_up}};
}

core::Status LinkFlap::apply(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  core::Status status = links_->setAdminUp(target->netns, target->ifname, false);
  return status.withContext("link_flap down " + target->ifname);
}

core::Status LinkFlap::revert(const Fault& fault, const json& prior) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  bool up = true;
  if (prior.is_object()) {
    auto it = prior.find("admin_up");
    if (it != prior.end() && it->is_boolean()) up = it->get<bool>();
  }
  core::Status status = links_->setAdminUp(target->netns, target->ifname, up);
  if (status.code() == core::StatusCode::kNotFound) return core::Status::ok();
  return status.withContext(std::string("link_flap restore ") + target->ifname +
                            (up ? " up" : " down"));
}

core::Result<json> LinkFlap::observe(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  auto link = links_->getLink(target->netns, target->ifname);
  if (!link.isOk()) return link.status().withContext("link_flap observe");
  return json{
      {"admin_up", link->admin_up}, {"carrier", link->carrier}, {"operstate", link->operstate}};
}

}  // namespace fabric_chaos::injectors
