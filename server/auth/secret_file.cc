#include "server/auth/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string_view>
#include <vector>

namespace fabric_chaos::auth {

using core::Status;

namespace {

Status writeAllAndSync(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return core::errnoStatus(errno, "writing " + path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return core::errnoStatus(errno, "fsync " + path);
  return Status::ok();
}

// Replaces an existing file: a 0600 temporary in the same directory, renamed over it.
Status replaceAtomically(const std::string& path, const std::string& text) {
  std::string tmpl = path + ".tmpXXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);  // mkostemp creates with mode 0600
  if (fd < 0) return core::errnoStatus(errno, "creating a temporary file next to " + path);
  const std::string tmp(name.data());
  Status s = ::fchmod(fd, 0600) == 0 ? writeAllAndSync(fd, text, tmp)
                                     : core::errnoStatus(errno, "chmod 0600 " + tmp);
  if (::close(fd) != 0 && s.isOk()) s = core::errnoStatus(errno, "closing " + tmp);
  if (s.isOk() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = core::errnoStatus(errno, "renaming " + tmp + " to " + path);
  }
  if (!s.isOk()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace

Status writeSecretFile(const std::string& path, const std::string& content) {
  const std::string text = content + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return replaceAtomically(path, text);
    return core::errnoStatus(errno, "creating " + path);
  }
  Status s = writeAllAndSync(fd, text, path);
  if (::close(fd) != 0 && s.isOk()) s = core::errnoStatus(errno, "closing " + path);
  if (!s.isOk()) ::unlink(path.c_str());
  return s;
}

core::Result<std::string> readSecretFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return core::errnoStatus(errno, "opening " + path);
  std::string text;
  char buffer[512];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = core::errnoStatus(errno, "reading " + path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > 64 * 1024) break;  // a secret is one short line
  }
  ::close(fd);
  std::string_view view = text;
  view = view.substr(0, view.find('\n'));
  const char* kSpace = " \t\r";
  size_t start = view.find_first_not_of(kSpace);
  if (start == std::string_view::npos) return std::string();
  size_t end = view.find_last_not_of(kSpace);
  return std::string(view.substr(start, end - start + 1));
}

}  // namespace fabric_chaos::auth
