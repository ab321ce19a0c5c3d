#pragma once
// `fabric-chaos lab up|down|status --kind ib`: the simulated InfiniBand lab (lab/ib_lab.h).

#include <string>

#include "app/cli.h"

namespace fabric_chaos::app {

// The flags only the IB lab reads, for lab_cmd's flag rules and its checks of other kinds.
extern const char* const kIbLabOnlyFlags[5];

int ibLabMain(const Flags& flags, const std::string& action);

}  // namespace fabric_chaos::app
