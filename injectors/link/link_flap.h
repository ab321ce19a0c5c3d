#pragma once
// link_flap: one administrative down (apply) and up (revert) of an interface through netlink.
// The down/up pattern (down_ms, up_ms, count) is timed by the engine, not here. revert restores
// the admin state captured before the fault, so a link that was already down stays down.
// Called from the engine's run thread; holds no state between calls.

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class LinkControl;
}

namespace fabric_chaos::injectors {

class LinkFlap : public Injector {
 public:
  static constexpr const char* kKind = "link_flap";

  explicit LinkFlap(sys::LinkControl* links) : links_(links) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  // The schema alone (link_flap_spec.cc): down_ms, up_ms, count.
  core::Status validate(const json& params) const override;
  // {"admin_up": bool}
  core::Result<json> capture(const Fault& fault) override;
  core::Status apply(const Fault& fault) override;
  // Restores prior["admin_up"] (up when absent). A device that no longer exists has nothing
  // left to restore, so kNotFound counts as reverted.
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"admin_up", "carrier", "operstate"}
  core::Result<json> observe(const Fault& fault) override;

 private:
  sys::LinkControl* links_;
};

}  // namespace fabric_chaos::injectors
