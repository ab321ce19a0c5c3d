#pragma once
// What the agent says to an armed verbs shim over its control channel, one JSON object per line,
// and what the shim answers (verbs_shim/sys/control_server.h carries the lines):
//   {"arm": [fault, ...], "lease_ms": 5000, "seed": 1} -> {"ok": true, "armed": 2}
//   {"renew": true}                                    -> {"ok": true, "lease_ms": 5000}
//   {"disarm": true}                                   -> {"ok": true}
//   {"status": true}                                   -> {"ok": true, "pid", "armed": [...]}
//   anything else                                      -> {"ok": false, "error": "..."}
// A fault is verbs_shim/plan.h's JSON. The lease is how long the faults stay armed without a
// renew: an agent that goes away leaves nothing armed for longer than that. Pure.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "verbs_shim/plan.h"

namespace fabric_chaos::verbs_shim {

inline constexpr int64_t kMinLeaseMs = 100;
inline constexpr int64_t kMaxLeaseMs = 600000;

struct ArmRequest {
  std::vector<ShimFault> faults;
  int64_t lease_ms = 5000;
  uint64_t seed = 1;
};
struct RenewRequest {};
struct DisarmRequest {};
struct StatusRequest {};
using ControlRequest = std::variant<ArmRequest, RenewRequest, DisarmRequest, StatusRequest>;

// kInvalidArgument naming the field ("arm[1].trigger.probability: ...") for anything else.
core::Result<ControlRequest> parseControlRequest(const std::string& line);

// {"ok": false, "error": message}
nlohmann::json controlError(const std::string& message);

}  // namespace fabric_chaos::verbs_shim
