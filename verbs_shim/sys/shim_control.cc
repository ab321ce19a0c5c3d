#include "verbs_shim/sys/shim_control.h"

#include <cstdlib>

#include "verbs_shim/sys/context_ops.h"
#include "verbs_shim/sys/held_completions.h"
#include "verbs_shim/sys/qp_registry.h"

namespace fabric_chaos::verbs_shim {

std::optional<int> rankFromEnvironment(const char* (*getenv)(const char*)) {
  for (const char* name :
       {"FABRIC_CHAOS_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}) {
    const char* value = getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank <= 1 << 30) return static_cast<int>(rank);
  }
  return std::nullopt;
}

void ShimControl::arm(const ArmRequest& request) { verbs_shim::arm(request.faults, request.seed); }

void ShimControl::disarm() { verbs_shim::disarm(); }

nlohmann::json ShimControl::statusMembers() {
  nlohmann::json armed = nlohmann::json::array();
  for (const InjectionCount& count : injections()) {
    armed.push_back({{"kind", describe(count.kind)}, {"seen", count.seen}, {"fired", count.fired}});
  }
  return {{"comm", comm_},
          {"rank", rank_ ? nlohmann::json(*rank_) : nlohmann::json(nullptr)},
          {"devices", interposedDevices()},
          {"armed", armed},
          {"qps_errored", qpsErrored()},
          {"completions_held", completionsHeld()}};
}

}  // namespace fabric_chaos::verbs_shim
