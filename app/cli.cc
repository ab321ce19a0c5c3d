#include "app/cli.h"

#include <cstdio>
#include <limits>
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

bool readIntFlag(const Flags& flags, const std::string& command, const std::string& name,
                 int64_t low, int64_t high, int64_t& out) {
  auto text = flags.get(name);
  if (!text) return true;
  auto value = core::parseFlagInteger("--" + name, *text, low, high);
  if (!value.isOk()) {
    std::fprintf(stderr, "fabric-chaos %s: %s\n", command.c_str(),
                 value.status().message().c_str());
    return false;
  }
  out = *value;
  return true;
}

bool readIntFlag(const Flags& flags, const std::string& command, const std::string& name,
                 int& out) {
  int64_t value = out;
  if (!readIntFlag(flags, command, name, std::numeric_limits<int>::min(),
                   std::numeric_limits<int>::max(), value)) {
    return false;
  }
  out = static_cast<int>(value);
  return true;
}

int labOutcome(const std::string& action, const core::Status& status) {
  if (status.isOk()) return 0;
  std::fprintf(stderr, "fabric-chaos lab %s: %s\n", action.c_str(), status.message().c_str());
  return 1;
}

}  // namespace fabric_chaos::app
