#pragma once
// Small text helpers shared by the modules that read files, flags and command output.

#include <string>
#include <string_view>

namespace fabric_chaos::core {

// `text` without leading and trailing whitespace (space, tab, CR, LF, VT, FF).
std::string trimWhitespace(std::string_view text);

// A small file's text without surrounding whitespace, as sysfs and procfs attributes are read;
// "" when it cannot be read (an attribute may vanish while a directory is walked).
std::string readTrimmedFile(const std::string& path);

}  // namespace fabric_chaos::core
