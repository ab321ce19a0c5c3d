#include "core/file_replace.h"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace fabric_chaos::core {

Status replaceFileContents(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Status(StatusCode::kInternal, "cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(temporary.c_str());
    return errnoStatus(err, "cannot rename " + temporary + " to " + path);
  }
  return Status::ok();
}

Result<std::string> readWholeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return errnoStatus(errno, "cannot read " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace fabric_chaos::core
