#pragma once
// The scenario and suite libraries shipped inside the binary (scenarios/library/*.json and
// scenarios/library/suites/*.json).

#include <string>
#include <vector>

namespace fabric_chaos::app {

struct BuiltinScenario {
  std::string name;
  std::string json;
};

std::vector<BuiltinScenario> builtinScenarios();
// The suite library (scenarios/library/suites/*.json), as name and suite document.
std::vector<BuiltinScenario> builtinSuites();

}  // namespace fabric_chaos::app
