#include "server/http/static_files.h"

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "server/api/util.h"

namespace fabric_chaos::http {

using core::Status;
using core::StatusCode;

namespace {

std::string pathOf(const std::string& target) {
  return target.substr(0, target.find_first_of("?#"));
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool isApiPath(const std::string& target) {
  const std::string path = pathOf(target);
  return path == "/v1" || path.rfind("/v1/", 0) == 0 || path == "/healthz" || path == "/metrics";
}

std::string contentTypeFor(const std::string& path) {
  struct Entry {
    const char* ext;
    const char* type;
  };
  static constexpr Entry kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".ico", "image/x-icon"},
      {".webp", "image/webp"},
      {".wasm", "application/wasm"},
      {".woff", "font/woff"},
      {".woff2", "font/woff2"},
      {".yaml", "application/yaml"},
      {".yml", "application/yaml"},
  };
  std::string lower;
  for (char c : path)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const Entry& entry : kTypes) {
    if (endsWith(lower, entry.ext)) return entry.type;
  }
  return "application/octet-stream";
}

core::Result<StaticFile> readStaticFile(const std::string& web_root, const std::string& target) {
  auto decoded = api::percentDecode(pathOf(target), false);
  if (!decoded) return decoded.status();
  std::string path = decoded.value();
  if (path.empty() || path[0] != '/') {
    return Status(StatusCode::kInvalidArgument, "request target must be an absolute path");
  }
  if (path.find('\0') != std::string::npos || path.find('\\') != std::string::npos) {
    return Status(StatusCode::kInvalidArgument, "path " + path + " has a forbidden character");
  }
  // Refuse any ".." segment outright rather than normalising it away.
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (path.compare(start, end - start, "..") == 0 && end - start == 2) {
      return Status(StatusCode::kInvalidArgument, "path " + path + " contains \"..\"");
    }
    start = end + 1;
  }
  if (path.back() == '/') path += "index.html";

  std::filesystem::path file = std::filesystem::path(web_root) / path.substr(1);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return Status(StatusCode::kNotFound, "no such file: " + decoded.value());
  }
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err != 0) return core::errnoStatus(err, "cannot open " + decoded.value());
    return Status(StatusCode::kInternal, "cannot open " + decoded.value());
  }
  std::ostringstream body;
  body << in.rdbuf();
  if (in.bad()) return Status(StatusCode::kInternal, "cannot read " + decoded.value());
  return StaticFile{contentTypeFor(file.string()), std::move(body).str()};
}

}  // namespace fabric_chaos::http
