#include "injectors/netem/netem.h"

#include "injectors/model/netem_kind_spec.h"
#include "injectors/netem/netem_spec.h"
#include "injectors/sys/qdisc.h"

namespace fabric_chaos::injectors {
namespace {

core::Status invalid(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, param + ": " + problem);
}

// TCA_OPTIONS (rtnetlink's attribute 2), the part of a saved qdisc its configuration lives in.
constexpr uint16_t kOptionsAttribute = 2;

const std::vector<uint8_t>* optionsOf(const sys::SavedQdisc& saved) {
  for (const sys::RawAttribute& attribute : saved.attributes) {
    if (attribute.type == kOptionsAttribute) return &attribute.data;
  }
  return nullptr;
}

bool sameQdisc(const sys::SavedQdisc& a, const sys::SavedQdisc& b) {
  if (a.kind != b.kind || a.handle != b.handle) return false;
  const std::vector<uint8_t>* ao = optionsOf(a);
  const std::vector<uint8_t>* bo = optionsOf(b);
  if (ao == nullptr || bo == nullptr) return ao == bo;
  return *ao == *bo;
}

core::Status unrestorable(const InterfaceTarget& target, const sys::SavedQdisc& saved) {
  return core::Status(core::StatusCode::kFailedPrecondition,
                      "root qdisc " + saved.kind + " " + sys::formatQdiscHandle(saved.handle) +
                          " on " + target.ifname + " could not be given back after netem: " +
                          saved.unrestorable + "; remove it or choose another interface");
}

}  // namespace

Netem::Netem(sys::Qdiscs* qdiscs, bool available, std::string reason)
    : qdiscs_(qdiscs), available_(available && qdiscs != nullptr), reason_(std::move(reason)) {
  if (qdiscs_ == nullptr && reason_.empty()) reason_ = "no qdisc adapter";
}

const KindSpec& Netem::spec() const { return netemKindSpec(); }

KindInfo Netem::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = available_;
  info.reason = available_ ? "" : reason_;
  info.backend = "netem";
  return info;
}

core::Status Netem::validate(const json& params) const {
  FC_RETURN_IF_ERROR(checkParams(spec(), params));
  return netemSpecFromParams(params).status();
}

core::Result<InterfaceTarget> Netem::checkUsable(const Fault& fault) const {
  auto target = requireInterface(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (target->ifname.empty()) return invalid("target.ifname", "required");
  if (qdiscs_ == nullptr) return core::Status(core::StatusCode::kNotSupported, reason_);
  return target;
}

core::Result<json> Netem::capture(const Fault& fault) {
  auto target = checkUsable(fault);
  if (!target.isOk()) return target.status();
  auto saved = qdiscs_->saveRoot(target->netns, target->ifname);
  if (!saved.isOk()) return saved.status().withContext("netem capture on " + target->ifname);
  if (saved->has_value() && !(*saved)->isKernelDefault() && !(*saved)->unrestorable.empty()) {
    return unrestorable(*target, **saved);
  }
  return priorJson(*saved);
}

core::Status Netem::apply(const Fault& fault) {
  auto target = checkUsable(fault);
  if (!target.isOk()) return target.status();
  auto spec = netemSpecFromParams(fault.params);
  if (!spec.isOk()) return spec.status();
  if (!available_) {
    return core::Status(core::StatusCode::kNotSupported, "netem is unavailable: " + reason_);
  }
  const std::string context = "netem apply on " + target->ifname;
  // The same guard as capture(): apply may run without it (a test, a replayed step).
  auto current = qdiscs_->saveRoot(target->netns, target->ifname);
  if (!current.isOk()) return current.status().withContext(context);
  if (current->has_value() && !(*current)->isKernelDefault() && (*current)->kind != "netem" &&
      !(*current)->unrestorable.empty()) {
    return unrestorable(*target, **current);
  }
  return qdiscs_->replaceRootNetem(target->netns, target->ifname, *spec).withContext(context);
}

core::Status Netem::revert(const Fault& fault, const json& prior) {
  auto target = checkUsable(fault);
  if (!target.isOk()) return target.status();
  const std::string context = "netem revert on " + target->ifname;
  // No prior (capture never ran): the kernel default is the best guess.
  core::Result<std::optional<sys::SavedQdisc>> saved_prior = std::optional<sys::SavedQdisc>();
  if (!prior.is_null() && !(prior.is_object() && prior.empty())) {
    saved_prior = priorFromJson(prior);
  }
  const sys::SavedQdisc* want =
      saved_prior.isOk() && saved_prior->has_value() ? &**saved_prior : nullptr;

  auto current = qdiscs_->saveRoot(target->netns, target->ifname);
  if (current.status().code() == core::StatusCode::kNotFound) return core::Status::ok();
  if (!current.isOk()) return current.status().withContext(context);
  const sys::SavedQdisc* now =
      current->has_value() && !(*current)->isKernelDefault() ? &**current : nullptr;

  if (now != nullptr && want != nullptr && sameQdisc(*now, *want)) return core::Status::ok();
  if (now != nullptr) {
    // We only ever attach netem; anything else was put there by someone else after apply.
    if (now->kind != "netem") return core::Status::ok();
    core::Status deleted = qdiscs_->deleteRoot(target->netns, target->ifname);
    if (deleted.code() == core::StatusCode::kNotFound) return core::Status::ok();
    FC_RETURN_IF_ERROR(deleted.withContext(context));
  }
  if (!saved_prior.isOk()) {
    return saved_prior.status().withContext(context +
                                            ": netem removed, but the prior root qdisc "
                                            "cannot be re-created");
  }
  if (want == nullptr) return core::Status::ok();
  core::Status restored = qdiscs_->restoreRoot(target->netns, target->ifname, *want);
  if (restored.code() == core::StatusCode::kNotFound) return core::Status::ok();
  return restored.withContext(context);
}

core::Result<json> Netem::observe(const Fault& fault) {
  auto target = checkUsable(fault);
  if (!target.isOk()) return target.status();
  auto root = qdiscs_->getRoot(target->netns, target->ifname);
  if (!root.isOk()) return root.status().withContext("netem observe on " + target->ifname);
  sys::QdiscInfo qdisc;
  if (root->has_value()) qdisc = **root;
  json out{{"backend", "netem"},         {"active", qdisc.kind == "netem"},
           {"kind", qdisc.kind},         {"handle", sys::formatQdiscHandle(qdisc.handle)},
           {"packets", qdisc.packets},   {"bytes", qdisc.bytes},
           {"drops", qdisc.drops},       {"overlimits", qdisc.overlimits},
           {"requeues", qdisc.requeues}, {"qlen", qdisc.qlen},
           {"backlog", qdisc.backlog}};
  if (qdisc.kind == "netem") {
    auto attributes = sys::decodeNetemOptions(qdisc.options);
    if (!attributes.isOk()) {
      return attributes.status().withContext("netem observe on " + target->ifname);
    }
    out["options"] = netemOptionsJson(*attributes);
  }
  return out;
}

}  // namespace fabric_chaos::injectors
