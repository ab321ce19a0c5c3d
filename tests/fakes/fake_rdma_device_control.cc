#include "tests/fakes/fake_rdma_device_control.h"

#include <cerrno>

namespace fabric_chaos::fakes {

void FakeRdmaDeviceControl::addDevice(FakeRdmaDevice device) {
  std::lock_guard<std::mutex> lock(mu_);
  devices_[device.name] = std::move(device);
}

std::optional<FakeRdmaDevice> FakeRdmaDeviceControl::device(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(name);
  if (it == devices_.end()) return std::nullopt;
  return it->second;
}

void FakeRdmaDeviceControl::setGid(const std::string& device, int gid_index,
                                   std::optional<sys::RdmaGidAddress> gid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device);
  if (it == devices_.end()) return;
  if (gid) {
    it->second.gids[gid_index] = *gid;
  } else {
    it->second.gids.erase(gid_index);
  }
}

void FakeRdmaDeviceControl::setOpenContexts(const std::string& device, int contexts) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device);
  if (it != devices_.end()) it->second.open_contexts = contexts;
}

void FakeRdmaDeviceControl::setPortState(const std::string& device, int port,
                                         const std::string& state) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = devices_.find(device);
  if (it != devices_.end()) it->second.port_states[port] = state;
}

void FakeRdmaDeviceControl::failOnCall(int n, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  schedule_.failOn(n, std::move(status));
}

std::vector<std::string> FakeRdmaDeviceControl::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

core::Status FakeRdmaDeviceControl::missing(const std::string& device) const {
  return core::Status(core::StatusCode::kNotFound, "no RDMA device " + device, ENODEV);
}

core::Result<bool> FakeRdmaDeviceControl::exists(const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("exists " + device);
  return devices_.count(device) > 0;
}

core::Result<sys::RdmaPortLink> FakeRdmaDeviceControl::port(const std::string& device, int port) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("port " + device + " " + std::to_string(port));
  auto it = devices_.find(device);
  if (it == devices_.end()) return missing(device);
  auto state = it->second.port_states.find(port);
  if (state == it->second.port_states.end()) {
    return core::Status(core::StatusCode::kNotFound,
                        device + " has no port " + std::to_string(port), EINVAL);
  }
  const bool active = state->second == "ACTIVE";
  return sys::RdmaPortLink{device, port, state->second, active ? "LINK_UP" : "DISABLED",
                           it->second.netdev};
}

core::Result<sys::RdmaGidAddress> FakeRdmaDeviceControl::gidAddress(const std::string& device,
                                                                    int port, int gid_index) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("gidAddress " + device + " " + std::to_string(port) + " " +
                   std::to_string(gid_index));
  auto it = devices_.find(device);
  if (it == devices_.end()) return missing(device);
  auto gid = it->second.gids.find(gid_index);
  if (port != 1 || gid == it->second.gids.end()) {
    return core::Status(core::StatusCode::kNotFound, "the GID entry is empty", ENOENT);
  }
  return gid->second;
}

core::Result<std::string> FakeRdmaDeviceControl::linkType(const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("linkType " + device);
  auto it = devices_.find(device);
  if (it == devices_.end()) return missing(device);
  return it->second.link_type;
}

core::Result<int> FakeRdmaDeviceControl::openContexts(const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("openContexts " + device);
  auto it = devices_.find(device);
  if (it == devices_.end()) return missing(device);
  return it->second.open_contexts;
}

core::Status FakeRdmaDeviceControl::removeLink(const std::string& device) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("removeLink " + device);
  if (auto failure = schedule_.next()) return *failure;
  if (devices_.erase(device) == 0) return missing(device);
  return core::Status::ok();
}

core::Status FakeRdmaDeviceControl::addLink(const std::string& name, const std::string& link_type,
                                            const std::string& netdev) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("addLink " + name + " " + link_type + " " + netdev);
  if (auto failure = schedule_.next()) return *failure;
  for (const auto& [existing, device] : devices_) {
    if (existing == name || (device.netdev == netdev && device.link_type == link_type)) {
      return core::Status(core::StatusCode::kAlreadyExists, netdev + " already has a device",
                          EEXIST);
    }
  }
  FakeRdmaDevice device;
  device.name = name;
  device.link_type = link_type;
  device.netdev = netdev;
  devices_[name] = std::move(device);
  return core::Status::ok();
}

}  // namespace fabric_chaos::fakes
