#include "injectors/sys/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <system_error>
#include <thread>

namespace fabric_chaos::sys {
namespace {

constexpr const char* kNetnsDir = "/run/netns/";

// A name that cannot escape /run/netns ("../", "a/b") and fits a file name.
bool isValidNetnsName(const std::string& netns) {
  if (netns.empty() || netns.size() > 255 || netns == "." || netns == "..") return false;
  return netns.find('/') == std::string::npos && netns.find('\0') == std::string::npos;
}

// Runs body on a fresh thread and returns its Status. The thread's namespace changes die with
// it, which is why the caller's thread is never touched. Exceptions are turned into kInternal so
// a throwing callback cannot std::terminate the process from a detached context.
core::Status runOnThread(const std::function<core::Status()>& body) {
  core::Status result;
  try {
    std::thread worker([&] {
      try {
        result = body();
      } catch (const std::exception& e) {
        result = core::Status(core::StatusCode::kInternal,
                              std::string("namespace worker threw: ") + e.what());
      }
    });
    worker.join();
  } catch (const std::system_error& e) {
    return core::Status(core::StatusCode::kUnavailable,
                        std::string("cannot start a namespace worker thread: ") + e.what(),
                        e.code().value());
  }
  return result;
}

}  // namespace

core::Status runInNetns(const std::string& netns, const std::function<core::Status()>& fn) {
  if (netns.empty()) return fn();
  if (!isValidNetnsName(netns)) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "invalid network namespace name '" + netns + "'");
  }
  const std::string path = kNetnsDir + netns;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return core::Status(core::StatusCode::kNotFound,
                          "network namespace " + netns + " does not exist", err);
    }
    return core::errnoStatus(err, "cannot open network namespace " + netns);
  }
  core::Status status = runOnThread([&]() -> core::Status {
    if (::setns(fd, CLONE_NEWNET) != 0) {
      return core::errnoStatus(errno, "cannot enter network namespace " + netns);
    }
    return fn();
  });
  ::close(fd);
  return status;
}

core::Status runInScratchNetns(const std::function<core::Status()>& fn) {
  return runOnThread([&]() -> core::Status {
    if (::unshare(CLONE_NEWNET) != 0) {
      return core::errnoStatus(errno, "cannot create a scratch network namespace");
    }
    return fn();
  });
}

bool netnsExists(const std::string& netns) {
  if (!isValidNetnsName(netns)) return false;
  struct stat st {};
  return ::stat((kNetnsDir + netns).c_str(), &st) == 0;
}

}  // namespace fabric_chaos::sys
