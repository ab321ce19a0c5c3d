#pragma once
// What the agent says about its host in /info and /describe: name, kernel, network interfaces and
// RDMA ports. The real probe reads sysfs, getifaddrs and uname; tests point it at a directory tree
// shaped like /sys.

#include <memory>
#include <string>
#include <vector>

namespace fabric_chaos::agent {

// What /info says about the host. The real probe reads sysfs, getifaddrs and uname; tests point it
// at a directory tree shaped like /sys.
struct NetdevInfo {
  std::string name;
  std::string address;  // first IPv4 address, else first IPv6, else ""
  std::string mac;
  std::string operstate;
  int mtu = 0;
};

struct RdmaPortInfo {
  std::string name;  // "rxe0", "mlx5_0"
  int port = 1;
  std::string state;   // "4: ACTIVE"
  std::string gid;     // gids/0
  std::string netdev;  // gid_attrs/ndevs/0, "" when the kernel does not say
};

class HostProbe {
 public:
  virtual ~HostProbe() = default;
  virtual std::string hostname() = 0;
  virtual std::string kernelRelease() = 0;
  virtual std::vector<NetdevInfo> netdevs() = 0;
  virtual std::vector<RdmaPortInfo> rdmaPorts() = 0;
};

// sys_root is "/sys" on a real host; a missing directory or file is an empty answer, not an error.
std::unique_ptr<HostProbe> makeSystemHostProbe(std::string sys_root = "/sys");

// The interface holding the default route in the text of /proc/net/route (lowest metric wins);
// "" when there is none.
std::string defaultRouteInterface(const std::string& proc_net_route);

}  // namespace fabric_chaos::agent
