#pragma once
// What RDMA devices this host has and what their ports count, read from sysfs
// (/sys/class/infiniband/<dev>/ports/<n>/): the one place that reads that tree, so that agents can
// be tested against a fake. A missing tree is an empty list (a host without RDMA), never an error.
// Thread-safe: every call reads afresh.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

// One port's hardware counters (ports/<n>/hw_counters/), under the kernel's names: rxe's
// sent_pkts, rcvd_seq_err, ...; mlx5's np_cnp_sent, rp_cnp_handled, out_of_sequence, ...
struct RdmaPortCounters {
  std::string device;
  int port = 1;
  std::vector<std::pair<std::string, int64_t>> counters;  // sorted by name
};

class RdmaDevices {
 public:
  virtual ~RdmaDevices() = default;
  // Sorted by name.
  virtual std::vector<RdmaDevice> list() = 0;
  // Every port that has hw_counters, by device then port. A counter file that cannot be read or
  // is not a number is left out; "lifespan" (how long the driver caches the values, in ms) is a
  // setting, not a counter, and is left out too.
  virtual std::vector<RdmaPortCounters> hwCounters() = 0;
};

// sys_root is "/sys" on a real host; tests point it at a directory shaped like it.
std::unique_ptr<RdmaDevices> makeSysfsRdmaDevices(std::string sys_root = "/sys");

// "4: ACTIVE" -> "ACTIVE"; text without a "N: " prefix is returned trimmed.
std::string rdmaPortStateName(const std::string& sysfs_state);

}  // namespace fabric_chaos::sys
