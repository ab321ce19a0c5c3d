#include "injectors/sys/directory_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace fabric_chaos::sys {
namespace {

constexpr uint32_t kEntryEvents =
    IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB;
// The directory itself going; IN_UNMOUNT and IN_IGNORED (the watch removed) come unasked.
constexpr uint32_t kSelfEvents = IN_DELETE_SELF | IN_MOVE_SELF;
constexpr uint32_t kWatchEndEvents = kSelfEvents | IN_UNMOUNT | IN_IGNORED;

class InotifyDirectoryWatch : public DirectoryWatch {
 public:
  explicit InotifyDirectoryWatch(core::UniqueFd fd) : fd_(std::move(fd)), owner_(::getpid()) {}

  DirectoryChanges poll() override {
    if (lost_ || ::getpid() != owner_) return DirectoryChanges::kWatchLost;
    DirectoryChanges changes = DirectoryChanges::kNone;
    // Drains the queue: a burst of writes to one file is one answer, not one per event.
    alignas(inotify_event) char buffer[4096];
    for (;;) {
      const ssize_t got = ::read(fd_.get(), buffer, sizeof(buffer));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno == EAGAIN) return changes;
      if (got <= 0) {  // an error, or an end the kernel never gives: trust nothing
        lost_ = true;
        return DirectoryChanges::kWatchLost;
      }
      for (ssize_t at = 0; at < got;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        if ((event->mask & kWatchEndEvents) != 0) lost_ = true;
        // IN_Q_OVERFLOW: events were dropped, so something changed that we cannot name.
        changes = DirectoryChanges::kSome;
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      }
      if (lost_) return DirectoryChanges::kWatchLost;
    }
  }

 private:
  core::UniqueFd fd_;
  pid_t owner_;
  bool lost_ = false;
};

}  // namespace

core::Result<std::unique_ptr<DirectoryWatch>> watchDirectory(const std::string& path) {
  core::UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd.valid()) return core::errnoStatus(errno, "cannot start an inotify instance");
  if (::inotify_add_watch(fd.get(), path.c_str(), kEntryEvents | kSelfEvents | IN_ONLYDIR) < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return core::Status(core::StatusCode::kNotFound, "no directory " + path, err);
    }
    return core::errnoStatus(err, "cannot watch " + path);
  }
  return std::unique_ptr<DirectoryWatch>(new InotifyDirectoryWatch(std::move(fd)));
}

}  // namespace fabric_chaos::sys
