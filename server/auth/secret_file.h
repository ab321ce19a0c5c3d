#pragma once
// Writing a secret (the first-start admin token) to a file only its owner can read. The file is
// created with O_CREAT|O_EXCL and mode 0600, or, when it already exists, replaced atomically by a
// 0600 temporary file renamed over it, so that no reader ever sees a partial or wider-open file.
// Errors are Statuses naming the path with errno as origin. Call from one thread per path.

#include <string>

#include "core/status.h"

namespace fabric_chaos::auth {

// Writes `content` followed by a newline to `path` (mode 0600) and fsyncs it.
core::Status writeSecretFile(const std::string& path, const std::string& content);

// The first line of `path` without surrounding whitespace; kNotFound if the file is missing.
core::Result<std::string> readSecretFile(const std::string& path);

}  // namespace fabric_chaos::auth
