#pragma once
// netem's declaration (injectors/model/kind_spec.h). The bounds are shared with the params-to-spec
// parser (netem_spec.cc), which also enforces the rules between parameters.

#include <climits>

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

inline constexpr double kNetemMaxDelayMs = 60000;
inline constexpr double kNetemMaxJitterMs = 2147;  // netem caps jitter at INT_MAX ns
inline constexpr double kNetemMaxRateKbit = 1e10;  // 10 Tbit/s
inline constexpr double kNetemMaxCount = INT_MAX;  // reorder_gap, limit_packets

const KindSpec& netemKindSpec();

}  // namespace fabric_chaos::injectors
