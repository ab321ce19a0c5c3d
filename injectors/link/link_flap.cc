#include "injectors/link/link_flap.h"

#include <cstdint>

#include "injectors/sys/links.h"

namespace fabric_chaos::injectors {
namespace {

core::Status invalid(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, param + ": " + problem);
}

// Integer (not 1.5, not "10", not true) in lo..hi.
core::Status checkIntRange(const json& params, const char* name, int64_t lo, int64_t hi,
                           bool required) {
  auto it = params.find(name);
  if (it == params.end()) return required ? invalid(name, "required") : core::Status::ok();
  bool ok = false;
  if (it->is_number_unsigned()) {
    uint64_t v = it->get<uint64_t>();
    ok = v >= static_cast<uint64_t>(lo) && v <= static_cast<uint64_t>(hi);
  } else if (it->is_number_integer()) {
    int64_t v = it->get<int64_t>();
    ok = v >= lo && v <= hi;
  }
  if (!ok) {
    return invalid(name, "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return core::Status::ok();
}

core::Status checkTarget(const Fault& fault) {
  if (fault.target.ifname.empty()) return invalid("target.ifname", "required");
  return core::Status::ok();
}

}  // namespace

KindInfo LinkFlap::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description =
      "Takes an interface administratively down, then up again; the engine repeats it "
      "(down_ms, up_ms, count) to emulate a flapping link.";
  info.available = links_ != nullptr;
  info.backend = "netlink";
  if (!info.available) info.reason = "no link adapter";
  return info;
}

core::Status LinkFlap::validate(const json& params) const {
  if (!params.is_object()) return invalid("params", "must be an object");
  for (const auto& [key, value] : params.items()) {
    if (key != "down_ms" && key != "up_ms" && key != "count") {
      return invalid(key, "unknown parameter (expected down_ms, up_ms, count)");
    }
  }
  FC_RETURN_IF_ERROR(checkIntRange(params, "down_ms", 1, 600000, true));
  FC_RETURN_IF_ERROR(checkIntRange(params, "up_ms", 1, 600000, false));
  FC_RETURN_IF_ERROR(checkIntRange(params, "count", 1, 1000, false));
  return core::Status::ok();
}

core::Result<json> LinkFlap::capture(const Fault& fault) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  auto link = links_->getLink(fault.target.netns, fault.target.ifname);
  if (!link.isOk()) return link.status().withContext("link_flap capture");
  return json{{"admin_up", link->admin_up}};
}

core::Status LinkFlap::apply(const Fault& fault) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  core::Status status = links_->setAdminUp(fault.target.netns, fault.target.ifname, false);
  return status.withContext("link_flap down " + fault.target.ifname);
}

core::Status LinkFlap::revert(const Fault& fault, const json& prior) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  bool up = true;
  if (prior.is_object()) {
    auto it = prior.find("admin_up");
    if (it != prior.end() && it->is_boolean()) up = it->get<bool>();
  }
  core::Status status = links_->setAdminUp(fault.target.netns, fault.target.ifname, up);
  if (status.code() == core::StatusCode::kNotFound) return core::Status::ok();
  return status.withContext(std::string("link_flap restore ") + fault.target.ifname +
                            (up ? " up" : " down"));
}

core::Result<json> LinkFlap::observe(const Fault& fault) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  if (links_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no link adapter");
  auto link = links_->getLink(fault.target.netns, fault.target.ifname);
  if (!link.isOk()) return link.status().withContext("link_flap observe");
  return json{
      {"admin_up", link->admin_up}, {"carrier", link->carrier}, {"operstate", link->operstate}};
}

}  // namespace fabric_chaos::injectors
