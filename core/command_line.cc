#include "core/command_line.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>

namespace fabric_chaos::core {
namespace {

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Result<CommandLine> parseCommandLine(const std::vector<std::string>& args, const FlagRules& rules) {
  CommandLine line;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // A lone "--" is not a flag; no command gives it the usual "end of options" meaning.
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      if (!rules.positional) return invalid("unexpected argument \"" + arg + "\"");
      line.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (contains(rules.boolean, name)) {
      if (value) return invalid("--" + name + " takes no value");
      line.flags.push_back({name, "true"});
      continue;
    }
    if (!contains(rules.valued, name)) return invalid("unknown option --" + name);
    if (!value) {
      if (i + 1 >= args.size()) return invalid("--" + name + " needs a value");
      value = args[++i];
    }
    line.flags.push_back({name, *value});
  }
  return line;
}

bool isEnvironmentName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::vector<std::string> commandLineArgs(int argc, char** argv, int first) {
  std::vector<std::string> args;
  for (int i = first; i < argc && argv[i] != nullptr; ++i) args.emplace_back(argv[i]);
  return args;
}

Result<int64_t> parseFlagInteger(const std::string& flag, const std::string& text, int64_t min,
                                 int64_t max) {
  const std::string range = std::to_string(min) + " and " + std::to_string(max);
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  // from_chars consumes every digit even when the number overflows: such text is an integer,
  // only too large, and the range says more than "expects an integer" would.
  if (ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range) || text.empty()) {
    return invalid(flag + " expects an integer, got \"" + text + "\"");
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    return invalid(flag + " must be between " + range + ", got " + text);
  }
  return value;
}

std::vector<std::string> splitCommaList(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace fabric_chaos::core
