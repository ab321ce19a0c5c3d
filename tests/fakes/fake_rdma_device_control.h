#pragma once
// In-memory sys::RdmaDeviceControl: devices by name, each with one netdev, its ports' states, a
// GID table and a count of open contexts; every call logged. removeLink and addLink are counted
// for failOnCall(). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "injectors/sys/rdma_device_control.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

struct FakeRdmaDevice {
  std::string name;               // "rxe0"
  std::string link_type = "rxe";  // "" for hardware
  std::string netdev = "eth0";    // "" for native InfiniBand
  std::map<int, std::string> port_states = {{1, "ACTIVE"}};
  std::map<int, sys::RdmaGidAddress> gids = {};  // port 1's table, by index
  int open_contexts = 0;
};

class FakeRdmaDeviceControl : public sys::RdmaDeviceControl {
 public:
  // Adds or replaces a device.
  void addDevice(FakeRdmaDevice device);
  std::optional<FakeRdmaDevice> device(const std::string& name) const;
  void setGid(const std::string& device, int gid_index, std::optional<sys::RdmaGidAddress> gid);
  void setOpenContexts(const std::string& device, int contexts);
  void setPortState(const std::string& device, int port, const std::string& state);

  // The nth removeLink or addLink call (1-based) fails with status and changes nothing.
  void failOnCall(int n, core::Status status);
  // "removeLink rxe0", "addLink rxe0 rxe eth0", "port rxe0 1", ...
  std::vector<std::string> calls() const;

  core::Result<bool> exists(const std::string& device) override;
  core::Result<sys::RdmaPortLink> port(const std::string& device, int port) override;
  core::Result<sys::RdmaGidAddress> gidAddress(const std::string& device, int port,
                                               int gid_index) override;
  core::Result<std::string> linkType(const std::string& device) override;
  core::Result<int> openContexts(const std::string& device) override;
  // Forgets the device: a re-added one starts with port 1 ACTIVE, no GIDs and no contexts.
  core::Status removeLink(const std::string& device) override;
  // kAlreadyExists when the name is taken or the netdev has a device of that type.
  core::Status addLink(const std::string& name, const std::string& link_type,
                       const std::string& netdev) override;

 private:
  core::Status missing(const std::string& device) const;

  mutable std::mutex mu_;
  std::map<std::string, FakeRdmaDevice> devices_;
  std::vector<std::string> calls_;
  FailSchedule schedule_;
};

}  // namespace fabric_chaos::fakes
