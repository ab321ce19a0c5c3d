#include "app/cli.h"

#include <algorithm>

namespace fabric_chaos::app {

std::optional<std::string> Flags::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::string Flags::getOr(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::string Flags::unknown(const std::vector<std::string>& allowed) const {
  for (const auto& [name, value] : values) {
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) return name;
  }
  return "";
}

Flags parseFlags(int argc, char** argv, const std::vector<std::string>& boolean) {
  Flags flags;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      flags.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    if (auto eq = name.find('='); eq != std::string::npos) {
      flags.values[name.substr(0, eq)] = name.substr(eq + 1);
      continue;
    }
    if (std::find(boolean.begin(), boolean.end(), name) != boolean.end()) {
      flags.values[name] = "true";
      continue;
    }
    if (i + 1 >= argc) {
      flags.error = "--" + name + " needs a value";
      continue;
    }
    flags.values[name] = argv[++i];
  }
  return flags;
}

}  // namespace fabric_chaos::app
