#include "injectors/sys/sysctl.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/unique_fd.h"
#include "injectors/sys/netns.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;

// Dotted names of letters, digits, '_' and '-' only: never a path out of /proc/sys.
bool isPlainKey(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.' ||
      key.find("..") != std::string::npos) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

std::string procPath(const std::string& key) {
  std::string path = "/proc/sys/" + key;
  std::replace(path.begin() + 10, path.end(), '.', '/');
  return path;
}

std::string where(const std::string& netns, const std::string& key) {
  return key + (netns.empty() ? "" : " in namespace " + netns);
}

Status openError(int err, const std::string& netns, const std::string& key) {
  if (err == ENOENT) return Status(StatusCode::kNotFound, "no setting " + where(netns, key), err);
  return core::errnoStatus(err, "cannot open " + where(netns, key));
}

class ProcSysctls : public NetnsSysctls {
 public:
  Status set(const std::string& netns, const std::string& key, const std::string& value) override {
    if (!isPlainKey(key)) return invalidKey(key);
    return runInNetns(netns, [&]() -> Status {
      core::UniqueFd fd(::open(procPath(key).c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd.valid()) return openError(errno, netns, key);
      const std::string line = value + "\n";
      const ssize_t wrote = ::write(fd.get(), line.data(), line.size());
      if (wrote != static_cast<ssize_t>(line.size())) {
        return core::errnoStatus(wrote < 0 ? errno : EIO,
                                 "cannot set " + where(netns, key) + " to " + value);
      }
      return Status::ok();
    });
  }

  core::Result<std::string> get(const std::string& netns, const std::string& key) override {
    if (!isPlainKey(key)) return invalidKey(key);
    std::string value;
    Status status = runInNetns(netns, [&]() -> Status {
      core::UniqueFd fd(::open(procPath(key).c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd.valid()) return openError(errno, netns, key);
      char buffer[256];
      ssize_t got;
      while ((got = ::read(fd.get(), buffer, sizeof(buffer))) > 0) {
        value.append(buffer, static_cast<size_t>(got));
      }
      if (got < 0) return core::errnoStatus(errno, "cannot read " + where(netns, key));
      return Status::ok();
    });
    if (!status.isOk()) return status;
    while (!value.empty() && value.back() == '\n') value.pop_back();
    return value;
  }

 private:
  static Status invalidKey(const std::string& key) {
    return Status(StatusCode::kInvalidArgument, "'" + key + "' is not a sysctl name");
  }
};

}  // namespace

std::unique_ptr<NetnsSysctls> makeProcSysctls() { return std::make_unique<ProcSysctls>(); }

}  // namespace fabric_chaos::sys
