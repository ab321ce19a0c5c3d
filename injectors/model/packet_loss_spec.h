#pragma once
// packet_loss's declaration (injectors/model/kind_spec.h).

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& packetLossSpec();

}  // namespace fabric_chaos::injectors
