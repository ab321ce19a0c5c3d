#include "app/cli.h"

#include <utility>

namespace fabric_chaos::app {

std::optional<std::string> Flags::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::string Flags::getOr(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

Flags parseFlags(int argc, char** argv, const core::FlagRules& rules) {
  Flags flags;
  auto line = core::parseCommandLine(core::commandLineArgs(argc, argv, 0), rules);
  if (!line.isOk()) {
    flags.error = line.status().message();
    return flags;
  }
  for (const auto& flag : line->flags) flags.values[flag.name] = flag.value;
  flags.positional = std::move(line->positional);
  return flags;
}

}  // namespace fabric_chaos::app
