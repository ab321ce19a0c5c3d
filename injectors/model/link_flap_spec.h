#pragma once
// link_flap's declaration (injectors/model/kind_spec.h): its parameters and its repeated down/up
// phases.

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

inline constexpr int64_t kMaxFlapPhaseMs = 600000;
inline constexpr int64_t kMaxFlapCount = 1000;

const KindSpec& linkFlapSpec();

}  // namespace fabric_chaos::injectors
