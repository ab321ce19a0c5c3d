#pragma once
// The one interface every fault family implements. apply and revert are idempotent both ways:
// applying twice leaves one fault, reverting a fault that is not there succeeds. capture() reads
// the state revert() must restore, so the engine can journal it before anything changes.
// Implementations are called from the engine's run thread and from start-up recovery; one fault
// target is never driven from two threads at once.

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "injectors/model/kind_spec.h"
#include "injectors/model/target.h"

namespace fabric_chaos::injectors {

using nlohmann::json;

struct Fault {
  std::string kind;
  Target target;
  json params = json::object();
};

// {"kind", "target" (tagged, injectors/model/target.h), "params"}: the journal's form.
json toJson(const Fault& fault);
core::Result<Fault> faultFromJson(const json& doc);

// One string per (kind, target), so that an agent knows a fault it already holds; and the fault
// for messages, "link_flap on fcl-sw0/p1".
std::string faultKey(const Fault& fault);
std::string describe(const Fault& fault);

struct KindInfo {
  std::string kind;
  std::string description;
  bool available = false;
  std::string reason;   // why not, when unavailable: "sch_netem is not in this kernel"
  std::string backend;  // "netlink", "nftables", "netem", ...
};

class Injector {
 public:
  virtual ~Injector() = default;
  // What the kind declares (injectors/model/kind_spec.h): parameters, phases, composition,
  // lifecycle.
  virtual const KindSpec& spec() const = 0;
  // Availability and backend on this host: the kernel probe's verdict.
  virtual KindInfo info() const = 0;
  // Checks params without touching the system: the schema (checkParams), then the rules between
  // parameters and those that depend on this host's backends. kInvalidArgument naming the
  // parameter.
  virtual core::Status validate(const json& params) const = 0;
  virtual core::Result<json> capture(const Fault& fault) = 0;
  virtual core::Status apply(const Fault& fault) = 0;
  virtual core::Status revert(const Fault& fault, const json& prior) = 0;
  // What the system says about the fault right now (link state, drop counters...).
  virtual core::Result<json> observe(const Fault& fault) = 0;
};

}  // namespace fabric_chaos::injectors
