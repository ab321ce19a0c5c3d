#pragma once
// The one interface every fault family implements. apply and revert are idempotent both ways:
// applying twice leaves one fault, reverting a fault that is not there succeeds. capture() reads
// the state revert() must restore, so the engine can journal it before anything changes.
// Implementations are called from the engine's run thread and from start-up recovery; one fault
// target is never driven from two threads at once.

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fabric_chaos::injectors {

using nlohmann::json;

struct InterfaceTarget {
  std::string netns;
  std::string ifname;
};

struct Fault {
  std::string kind;
  InterfaceTarget target;
  json params = json::object();
};

json toJson(const Fault& fault);
core::Result<Fault> faultFromJson(const json& doc);

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
  virtual KindInfo info() const = 0;
  // Checks params without touching the system: kInvalidArgument naming the parameter.
  virtual core::Status validate(const json& params) const = 0;
  virtual core::Result<json> capture(const Fault& fault) = 0;
  virtual core::Status apply(const Fault& fault) = 0;
  virtual core::Status revert(const Fault& fault, const json& prior) = 0;
  // What the system says about the fault right now (link state, drop counters...).
  virtual core::Result<json> observe(const Fault& fault) = 0;
};

}  // namespace fabric_chaos::injectors
