#pragma once
// pfc_watchdog's declaration (injectors/model/kind_spec.h): the PFC watchdog of a lab switch port
// set for the step's window (SONiC pfcwd's actions and defaults), so that one scenario compares a
// storm without a watchdog, with drop and with forward. An instant kind.

#include <optional>

#include "injectors/model/kind_spec.h"
#include "injectors/model/pfc_watchdog_config.h"

namespace fabric_chaos::injectors {

const KindSpec& pfcWatchdogSpec();

// The watchdog the params ask for; nullopt for action "off". Params must have passed checkParams.
std::optional<PfcWatchdogConfig> pfcWatchdogFromParams(const json& params);

}  // namespace fabric_chaos::injectors
