#include "core/line_reader.h"

#include <unistd.h>

#include <cerrno>

namespace fabric_chaos::core {

bool LineReader::readFrom(int fd, const OnLine& on_line) {
  char buffer[16384];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
  if (n <= 0) {
    if (!pending_.empty()) on_line(pending_);
    pending_.clear();
    return true;
  }
  pending_.append(buffer, static_cast<size_t>(n));
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
    on_line(pending_.substr(start, nl - start));
  }
  pending_.erase(0, start);
  return false;
}

}  // namespace fabric_chaos::core
