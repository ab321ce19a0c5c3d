#pragma once
// Whether anything in one directory changed since the last ask, through inotify: a file created,
// written in place, renamed in or out, removed, or its attributes touched. What lets a caller
// that must see every change skip listing and stat-ing the directory when nothing happened
// (serve's fault guard asks inside every fault apply). Changes made on another machine to a
// network file system are not reported; the fabric directory is local state.

#include <memory>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

enum class DirectoryChanges {
  kNone,       // nothing changed since the last poll (or since the watch began)
  kSome,       // something may have changed: read the directory again
  kWatchLost,  // the directory itself went (removed, renamed, unmounted) or the watch failed:
               // read the directory again and start a new watch
};

// One thread at a time (callers lock). A watch used in a forked child reports kWatchLost: the
// parent and the child would otherwise share one event queue and take each other's events.
class DirectoryWatch {
 public:
  virtual ~DirectoryWatch() = default;
  // Never blocks.
  virtual DirectoryChanges poll() = 0;
};

// Starts watching `path`. Changes from this call on are reported, so a caller reads the
// directory after starting the watch, never before. kNotFound when the directory does not exist;
// the errno otherwise (for example EMFILE when the user's inotify instances are used up).
core::Result<std::unique_ptr<DirectoryWatch>> watchDirectory(const std::string& path);

}  // namespace fabric_chaos::sys
