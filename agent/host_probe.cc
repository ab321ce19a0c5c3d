#include "agent/host_probe.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "core/text.h"

namespace fabric_chaos::agent {
namespace {

std::string readSmallFile(const std::filesystem::path& path) {
  return core::readTrimmedFile(path.string());
}

class SystemHostProbe : public HostProbe {
 public:
  explicit SystemHostProbe(std::string sys_root) : sys_root_(std::move(sys_root)) {}

  std::string hostname() override {
    utsname u{};
    return uname(&u) == 0 ? std::string(u.nodename) : "";
  }

  std::string kernelRelease() override {
    utsname u{};
    return uname(&u) == 0 ? std::string(u.release) : "";
  }

  std::vector<NetdevInfo> netdevs() override {
    std::map<std::string, std::string> addresses = interfaceAddresses();
    std::vector<NetdevInfo> out;
    std::error_code ec;
    const std::filesystem::path root = std::filesystem::path(sys_root_) / "class" / "net";
    for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
      NetdevInfo info;
      info.name = entry.path().filename().string();
      info.mac = readSmallFile(entry.path() / "address");
      info.operstate = readSmallFile(entry.path() / "operstate");
      const std::string mtu = readSmallFile(entry.path() / "mtu");
      info.mtu = std::atoi(mtu.c_str());
      if (auto it = addresses.find(info.name); it != addresses.end()) info.address = it->second;
      out.push_back(std::move(info));
    }
    std::sort(out.begin(), out.end(),
              [](const NetdevInfo& a, const NetdevInfo& b) { return a.name < b.name; });
    return out;
  }

  std::vector<RdmaPortInfo> rdmaPorts() override {
    std::vector<RdmaPortInfo> out;
    std::error_code ec;
    const std::filesystem::path root = std::filesystem::path(sys_root_) / "class" / "infiniband";
    for (const auto& device : std::filesystem::directory_iterator(root, ec)) {
      std::error_code port_ec;
      for (const auto& port :
           std::filesystem::directory_iterator(device.path() / "ports", port_ec)) {
        RdmaPortInfo info;
        info.name = device.path().filename().string();
        info.port = std::atoi(port.path().filename().string().c_str());
        info.state = readSmallFile(port.path() / "state");
        info.gid = readSmallFile(port.path() / "gids" / "0");
        info.netdev = readSmallFile(port.path() / "gid_attrs" / "ndevs" / "0");
        out.push_back(std::move(info));
      }
    }
    std::sort(out.begin(), out.end(), [](const RdmaPortInfo& a, const RdmaPortInfo& b) {
      return a.name != b.name ? a.name < b.name : a.port < b.port;
    });
    return out;
  }

 private:
  // First IPv4 address of each interface, else its first IPv6 one.
  static std::map<std::string, std::string> interfaceAddresses() {
    std::map<std::string, std::string> v4;
    std::map<std::string, std::string> v6;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return {};
    for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
      if (it->ifa_addr == nullptr || it->ifa_name == nullptr) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (it->ifa_addr->sa_family == AF_INET) {
        auto* sin = reinterpret_cast<sockaddr_in*>(it->ifa_addr);
        if (inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text)) != nullptr) {
          v4.emplace(it->ifa_name, text);
        }
      } else if (it->ifa_addr->sa_family == AF_INET6) {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(it->ifa_addr);
        if (inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text)) != nullptr) {
          v6.emplace(it->ifa_name, text);
        }
      }
    }
    freeifaddrs(list);
    for (auto& [name, address] : v6) v4.emplace(name, address);
    return v4;
  }

  std::string sys_root_;
};

}  // namespace

std::unique_ptr<HostProbe> makeSystemHostProbe(std::string sys_root) {
  return std::make_unique<SystemHostProbe>(std::move(sys_root));
}

std::string defaultRouteInterface(const std::string& proc_net_route) {
  std::istringstream in(proc_net_route);
  std::string line;
  std::string best;
  long best_metric = -1;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string iface, destination, gateway, flags_hex, refcnt, use, metric_text, mask;
    if (!(fields >> iface >> destination >> gateway >> flags_hex >> refcnt >> use >> metric_text >>
          mask)) {
      continue;
    }
    if (iface == "Iface" || destination != "00000000" || mask != "00000000") continue;
    long flags = 0;
    long metric = 0;
    try {
      flags = std::stol(flags_hex, nullptr, 16);
      metric = std::stol(metric_text);
    } catch (const std::exception&) {
      continue;
    }
    if ((flags & 0x1) == 0) continue;  // RTF_UP
    if (best_metric < 0 || metric < best_metric) {
      best = iface;
      best_metric = metric;
    }
  }
  return best;
}

}  // namespace fabric_chaos::agent
