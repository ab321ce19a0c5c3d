#pragma once
// The scripts shipped inside the binary that an exec workload can run by name
// (workload/scripts/; docs/workloads.md): `fabric-chaos workload-script NAME` prints one.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric_chaos::app {

// The text of a shipped script ("pytorch-ddp"), or nullopt.
std::optional<std::string_view> shippedScript(std::string_view name);
std::vector<std::string> shippedScriptNames();

}  // namespace fabric_chaos::app
