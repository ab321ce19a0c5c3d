#include "lab/fabric_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace fabric_chaos::lab {

std::map<std::string, DirectoryFabricCatalog::FileStamp> DirectoryFabricCatalog::scanStamps()
    const {
  std::map<std::string, FileStamp> stamps;
  std::error_code ec;
  const std::filesystem::path dir = state_dir_ + "/fabrics";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    const std::string path = entry.path().string();
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;  // removed meanwhile
    stamps[path] =
        FileStamp{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                  static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
  }
  return stamps;
}

std::optional<uint64_t> DirectoryFabricCatalog::version() {
  std::lock_guard lock(mu_);
  if (fabrics_watch_) {
    switch (fabrics_watch_->poll()) {
      case sys::DirectoryChanges::kNone:
        if (stamps_read_) return version_;
        break;
      case sys::DirectoryChanges::kSome:
        break;
      case sys::DirectoryChanges::kWatchLost:
        fabrics_watch_.reset();
        break;
    }
  }
  // The watch starts before the scan, so a change made during the scan is reported next time.
  if (!fabrics_watch_) {
    auto watch = sys::watchDirectory(state_dir_ + "/fabrics");
    if (watch.isOk()) fabrics_watch_ = std::move(watch.value());
  }
  std::map<std::string, FileStamp> stamps = scanStamps();
  if (!stamps_read_ || stamps != versioned_stamps_) {
    versioned_stamps_ = std::move(stamps);
    ++version_;
  }
  stamps_read_ = true;
  return version_;
}

std::vector<scenarios::Fabric> DirectoryFabricCatalog::list() {
  std::vector<scenarios::Fabric> fabrics;
  const std::map<std::string, FileStamp> stamps = scanStamps();
  std::lock_guard lock(mu_);
  std::set<std::string> present;
  for (const auto& [path, stamp] : stamps) {
    present.insert(path);
    auto cached = cache_.find(path);
    if (cached == cache_.end() || !(cached->second.stamp == stamp)) {
      CachedFile file{stamp, std::nullopt};
      std::ifstream in(path);
      auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_discarded()) {
        auto fabric = scenarios::fabricFromJson(doc);
        if (fabric.isOk()) file.fabric = std::move(fabric.value());
      }
      cached = cache_.insert_or_assign(path, std::move(file)).first;
    }
    if (cached->second.fabric) fabrics.push_back(*cached->second.fabric);
  }
  std::erase_if(cache_, [&](const auto& item) { return present.count(item.first) == 0; });
  std::sort(fabrics.begin(), fabrics.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return fabrics;
}

core::Result<scenarios::Fabric> DirectoryFabricCatalog::get(const std::string& name) {
  for (auto& fabric : list()) {
    if (fabric.name == name) return fabric;
  }
  return core::Status(core::StatusCode::kNotFound,
                      "fabric " + name + " is not registered; run `fabric-chaos lab up` first");
}

}  // namespace fabric_chaos::lab
