#pragma once
// The one tokenizer for every subcommand's `--name value` / `--name=value` flags, so that all of
// them accept the same spellings and refuse bad ones with the same words. It only splits and
// checks names; what a value means stays with each command. Pure; any thread.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::core {

// Names are given without the leading "--".
struct FlagRules {
  std::vector<std::string> valued;   // --name value or --name=value
  std::vector<std::string> boolean;  // --name alone; --name=v is refused
  bool positional = false;           // bare words (and a lone "--") allowed
};

struct ParsedFlag {
  std::string name;   // without "--"
  std::string value;  // "true" for a boolean flag
};

struct CommandLine {
  std::vector<ParsedFlag> flags;        // in command-line order, repeats kept
  std::vector<std::string> positional;  // in order
};

// The first problem as kInvalidArgument: `unknown option --x`, `--x needs a value`, `--x takes no
// value`, `unexpected argument "w"`. A valued flag takes the next word whatever it looks like, so
// `--token --odd` gives --token the value "--odd".
Result<CommandLine> parseCommandLine(const std::vector<std::string>& args, const FlagRules& rules);

// argv[first..argc), stopping early at a nullptr (a hand-built argv may end with one).
std::vector<std::string> commandLineArgs(int argc, char** argv, int first);

// All of `text` as a decimal integer in [min, max] (a leading '-' allowed, '+' and spaces not).
// kInvalidArgument: `--x expects an integer, got "t"` or `--x must be between A and B, got t`;
// `flag` is used as given, so pass it with its "--".
Result<int64_t> parseFlagInteger(const std::string& flag, const std::string& text, int64_t min,
                                 int64_t max);

// A POSIX environment variable name: letters, digits and '_', not starting with a digit.
bool isEnvironmentName(const std::string& name);

// A comma-separated flag value: each item trimmed of spaces and tabs, empty items dropped.
std::vector<std::string> splitCommaList(const std::string& text);

}  // namespace fabric_chaos::core
