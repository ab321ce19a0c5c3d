#include "injectors/sys/rdma_devices.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

#include "core/text.h"

namespace fabric_chaos::sys {
namespace {

namespace fs = std::filesystem;

std::string readSmallFile(const fs::path& path) { return core::readTrimmedFile(path.string()); }

class SysfsRdmaDevices : public RdmaDevices {
 public:
  explicit SysfsRdmaDevices(std::string sys_root) : sys_root_(std::move(sys_root)) {}

  std::vector<RdmaDevice> list() override {
    std::vector<RdmaDevice> out;
    std::error_code ec;
    for (const auto& device :
         fs::directory_iterator(fs::path(sys_root_) / "class" / "infiniband", ec)) {
      RdmaDevice dev;
      dev.name = device.path().filename().string();
      std::error_code port_ec;
      for (const auto& port : fs::directory_iterator(device.path() / "ports", port_ec)) {
        RdmaPortState state;
        state.port = std::atoi(port.path().filename().string().c_str());
        state.state = rdmaPortStateName(readSmallFile(port.path() / "state"));
        // Counted with the error_code forms: sysfs entries may vanish while we read (hot unplug).
        std::error_code gid_ec;
        for (fs::directory_iterator it(port.path() / "gids", gid_ec), end; !gid_ec && it != end;
             it.increment(gid_ec)) {
          ++state.gid_table_size;
        }
        dev.ports.push_back(std::move(state));
      }
      std::sort(dev.ports.begin(), dev.ports.end(),
                [](const RdmaPortState& a, const RdmaPortState& b) { return a.port < b.port; });
      out.push_back(std::move(dev));
    }
    std::sort(out.begin(), out.end(),
              [](const RdmaDevice& a, const RdmaDevice& b) { return a.name < b.name; });
    return out;
  }

  std::vector<RdmaPortCounters> hwCounters() override {
    std::vector<RdmaPortCounters> out;
    for (const RdmaDevice& dev : list()) {
      for (const RdmaPortState& port : dev.ports) {
        const fs::path dir = fs::path(sys_root_) / "class" / "infiniband" / dev.name / "ports" /
                             std::to_string(port.port) / "hw_counters";
        RdmaPortCounters counters{dev.name, port.port, {}};
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
          const std::string name = it->path().filename().string();
          if (name == "lifespan") continue;
          auto value = parseCounter(readSmallFile(it->path()));
          if (value) counters.counters.emplace_back(name, *value);
        }
        if (counters.counters.empty()) continue;
        std::sort(counters.counters.begin(), counters.counters.end());
        out.push_back(std::move(counters));
      }
    }
    return out;
  }

 private:
  static std::optional<int64_t> parseCounter(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || value > static_cast<unsigned long long>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(value);
  }

  std::string sys_root_;
};

}  // namespace

std::string rdmaPortStateName(const std::string& sysfs_state) {
  const std::string text = core::trimWhitespace(sysfs_state);
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return text;
  const std::string number = text.substr(0, colon);
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) return text;
  return core::trimWhitespace(text.substr(colon + 1));
}

std::unique_ptr<RdmaDevices> makeSysfsRdmaDevices(std::string sys_root) {
  return std::make_unique<SysfsRdmaDevices>(std::move(sys_root));
}

}  // namespace fabric_chaos::sys
