#pragma once
// Fabrics known to `serve`: every <state_dir>/fabrics/*.json, looked up on each call so that a lab
// brought up or down by another process is seen at once. A file is parsed again only when its
// modification time, size or inode changed: the local agent's allowlist asks on every fault apply,
// and re-parsing every fabric there put milliseconds between the ports of one flap instant.
// version() goes further and reads nothing while an inotify watch on the directory reports no
// change: concurrent applies used to queue behind one another's directory scans. Thread-safe.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "injectors/sys/directory_watch.h"
#include "scenarios/services.h"

namespace fabric_chaos::lab {

class DirectoryFabricCatalog : public scenarios::FabricCatalog {
 public:
  explicit DirectoryFabricCatalog(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  std::vector<scenarios::Fabric> list() override;
  core::Result<scenarios::Fabric> get(const std::string& name) override;
  // Bumped when a fabric file appears, goes or changes. While the directory watch is alive and
  // quiet this is one non-blocking read; otherwise the stamps are compared (nothing is parsed).
  std::optional<uint64_t> version() override;

 private:
  // What identifies one version of a file without reading it.
  struct FileStamp {
    int64_t mtime_ns = 0;
    int64_t size = 0;
    uint64_t inode = 0;
    bool operator==(const FileStamp&) const = default;
  };
  struct CachedFile {
    FileStamp stamp;
    std::optional<scenarios::Fabric> fabric;  // nullopt: not a valid fabric document
  };

  // Every *.json file in the fabrics directory with its stamp.
  std::map<std::string, FileStamp> scanStamps() const;

  std::string state_dir_;
  std::mutex mu_;
  std::map<std::string, CachedFile> cache_;  // by path
  std::map<std::string, FileStamp> versioned_stamps_;
  uint64_t version_ = 0;
  bool stamps_read_ = false;                            // versioned_stamps_ describe the directory
  std::unique_ptr<sys::DirectoryWatch> fabrics_watch_;  // null until the directory exists
};

}  // namespace fabric_chaos::lab
