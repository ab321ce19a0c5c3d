#pragma once
// hot_spot's declaration (injectors/model/kind_spec.h): persistent elephant flows pinned through
// one chosen switch port or uplink, sharing it with the training traffic; a long-running kind on
// a traffic-set target (its generators run until the revert).

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& hotSpotSpec();

// The source ports the search for ECMP-steered ports tries, from first_source_port on.
inline constexpr int kHotSpotPortSearch = 4096;

}  // namespace fabric_chaos::injectors
