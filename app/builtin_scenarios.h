#pragma once
// The scenario library shipped inside the binary (scenarios/library/*.json).

#include <string>
#include <vector>

namespace fabric_chaos::app {

struct BuiltinScenario {
  std::string name;
  std::string json;
};

std::vector<BuiltinScenario> builtinScenarios();

}  // namespace fabric_chaos::app
