#pragma once
// incast's declaration (injectors/model/kind_spec.h): N source hosts send TCP traffic to one sink
// host for the step's window, a long-running kind on a traffic-set target (its generators run
// until the revert).

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& incastSpec();

}  // namespace fabric_chaos::injectors
