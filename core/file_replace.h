#pragma once
// Replacing a small file's contents so that a reader sees the old file or the new one, never a
// part: the text goes to PATH.tmp, which is then renamed over PATH. Counters, settings and fabric
// descriptions that other processes poll are written this way.

#include <string>

#include "core/status.h"

namespace fabric_chaos::core {

Status replaceFileContents(const std::string& path, const std::string& text);

// The whole file; kNotFound when it does not exist.
Result<std::string> readWholeFile(const std::string& path);

}  // namespace fabric_chaos::core
