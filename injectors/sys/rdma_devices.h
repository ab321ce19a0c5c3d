#pragma once
// What RDMA devices this host has, read from sysfs (/sys/class/infiniband/<dev>/ports/<n>/): the
// one place that reads that tree, so that agents can be tested against a fake. A missing tree is
// an empty list (a host without RDMA), never an error. Thread-safe: every call reads afresh.

#include <memory>
#include <string>
#include <vector>

namespace fabric_chaos::sys {

struct RdmaPortState {
  int port = 1;
  std::string state;       // "ACTIVE", "DOWN", "INIT" ... (sysfs "4: ACTIVE" without the number)
  int gid_table_size = 0;  // entries under ports/<n>/gids/: how many GIDs the port can hold
};

struct RdmaDevice {
  std::string name;                  // "rxe0", "mlx5_0"
  std::vector<RdmaPortState> ports;  // by port number
};

class RdmaDevices {
 public:
  virtual ~RdmaDevices() = default;
  // Sorted by name.
  virtual std::vector<RdmaDevice> list() = 0;
};

// sys_root is "/sys" on a real host; tests point it at a directory shaped like it.
std::unique_ptr<RdmaDevices> makeSysfsRdmaDevices(std::string sys_root = "/sys");

// "4: ACTIVE" -> "ACTIVE"; text without a "N: " prefix is returned trimmed.
std::string rdmaPortStateName(const std::string& sysfs_state);

}  // namespace fabric_chaos::sys
