#pragma once
// pfc_config's declaration (injectors/model/kind_spec.h): lossless misconfiguration, the priorities
// an interface honours PFC on turned on or off for the step's window, an instant kind.

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& pfcConfigSpec();

// At least one of enable and disable, and no priority in both. kInvalidArgument naming the
// parameter.
core::Status checkPfcConfigParams(const json& params);

// The enable mask the fault leaves: `current` with `enable` set and `disable` cleared.
uint8_t pfcConfigMask(uint8_t current, const json& params);

}  // namespace fabric_chaos::injectors
