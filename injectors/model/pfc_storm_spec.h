#pragma once
// pfc_storm's declaration (injectors/model/kind_spec.h): an 802.1Qbb pause-frame sender on one
// interface for the step's window, a long-running kind (its emitter runs until the revert).

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& pfcStormSpec();

// The rules between parameters that the schema cannot say: mode "rate" needs rate_fps and only
// it takes one; continuous needs quanta >= 1 (a zero pause is never refreshed); on_ms and off_ms
// come together. kInvalidArgument naming the parameter.
core::Status checkPfcStormParams(const json& params);

}  // namespace fabric_chaos::injectors
