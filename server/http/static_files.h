#pragma once
// Static dashboard files for the HTTP transport (internal to server/http; kept out of the Beast
// translation unit). Blocking file reads: the files are small and local. Safe from any thread.

#include <string>

#include "core/status.h"

namespace fabric_chaos::http {

struct StaticFile {
  std::string content_type;
  std::string body;
};

// True for the paths the API owns (/v1, /v1/..., /healthz, /metrics); everything else may be a
// file.
bool isApiPath(const std::string& target);

// Content type by extension ("app.js" -> "text/javascript; charset=utf-8").
std::string contentTypeFor(const std::string& path);

// Reads the file `target` names under web_root ("/" and ".../" -> index.html). A ".." segment,
// a NUL or a bad percent escape is kInvalidArgument; a missing file or a directory is kNotFound.
core::Result<StaticFile> readStaticFile(const std::string& web_root, const std::string& target);

}  // namespace fabric_chaos::http
