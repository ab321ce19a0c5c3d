#include "tests/fakes/fake_ip_config.h"

#include <algorithm>

namespace fabric_chaos::fakes {
namespace {

std::string describe(const sys::IpAddress& address) {
  return address.local + "/" + std::to_string(address.prefix_len);
}

std::string describe(const sys::IpRoute& route) {
  return (route.destination.empty()
              ? std::string("default")
              : route.destination + "/" + std::to_string(route.destination_len)) +
         " table " + std::to_string(route.table);
}

bool sameAddress(const sys::IpAddress& a, const sys::IpAddress& b) {
  return a.family == b.family && a.local == b.local;
}

bool sameRoute(const sys::IpRoute& a, const sys::IpRoute& b) {
  return a.family == b.family && a.table == b.table && a.destination == b.destination &&
         a.destination_len == b.destination_len && a.tos == b.tos && a.priority == b.priority;
}

}  // namespace

void FakeIpConfig::setAddresses(const std::string& netns, const std::string& ifname,
                                std::vector<sys::IpAddress> addresses) {
  std::lock_guard<std::mutex> lock(mu_);
  netdevs_[{netns, ifname}].addresses = std::move(addresses);
}

void FakeIpConfig::setRoutes(const std::string& netns, const std::string& ifname,
                             std::vector<sys::IpRoute> routes) {
  std::lock_guard<std::mutex> lock(mu_);
  netdevs_[{netns, ifname}].routes = std::move(routes);
}

std::vector<sys::IpAddress> FakeIpConfig::addressesOf(const std::string& netns,
                                                      const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = netdevs_.find({netns, ifname});
  return it == netdevs_.end() ? std::vector<sys::IpAddress>{} : it->second.addresses;
}

std::vector<sys::IpRoute> FakeIpConfig::routesOf(const std::string& netns,
                                                 const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = netdevs_.find({netns, ifname});
  return it == netdevs_.end() ? std::vector<sys::IpRoute>{} : it->second.routes;
}

void FakeIpConfig::failOnCall(int n, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  schedule_.failOn(n, std::move(status));
}

std::vector<std::string> FakeIpConfig::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

core::Status FakeIpConfig::missing(const Key& key) const {
  return core::Status(core::StatusCode::kNotFound,
                      "no such device " + key.second + " in netns " + key.first,
                      31 /* NLE_NODEV */);
}

core::Result<std::vector<sys::IpAddress>> FakeIpConfig::addresses(const std::string& netns,
                                                                  const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("addresses " + netns + "/" + ifname);
  auto it = netdevs_.find({netns, ifname});
  if (it == netdevs_.end()) return missing({netns, ifname});
  return it->second.addresses;
}

core::Status FakeIpConfig::addAddress(const std::string& netns, const std::string& ifname,
                                      const sys::IpAddress& address) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("addAddress " + netns + "/" + ifname + " " + describe(address));
  if (auto failure = schedule_.next()) return *failure;
  auto it = netdevs_.find({netns, ifname});
  if (it == netdevs_.end()) return missing({netns, ifname});
  auto& list = it->second.addresses;
  if (std::any_of(list.begin(), list.end(),
                  [&](const sys::IpAddress& a) { return sameAddress(a, address); })) {
    return core::Status(core::StatusCode::kAlreadyExists, "File exists", 6 /* NLE_EXIST */);
  }
  list.push_back(address);
  return core::Status::ok();
}

core::Status FakeIpConfig::removeAddress(const std::string& netns, const std::string& ifname,
                                         const sys::IpAddress& address) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("removeAddress " + netns + "/" + ifname + " " + describe(address));
  if (auto failure = schedule_.next()) return *failure;
  auto it = netdevs_.find({netns, ifname});
  if (it == netdevs_.end()) return missing({netns, ifname});
  auto& list = it->second.addresses;
  auto found = std::find_if(list.begin(), list.end(),
                            [&](const sys::IpAddress& a) { return sameAddress(a, address); });
  if (found == list.end()) {
    return core::Status(core::StatusCode::kNotFound,
                        ifname + " has no address " + describe(address));
  }
  list.erase(found);
  return core::Status::ok();
}

core::Result<std::vector<sys::IpRoute>> FakeIpConfig::routes(const std::string& netns,
                                                             const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("routes " + netns + "/" + ifname);
  auto it = netdevs_.find({netns, ifname});
  if (it == netdevs_.end()) return missing({netns, ifname});
  return it->second.routes;
}

core::Status FakeIpConfig::addRoute(const std::string& netns, const std::string& ifname,
                                    const sys::IpRoute& route) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("addRoute " + netns + "/" + ifname + " " + describe(route));
  if (auto failure = schedule_.next()) return *failure;
  auto it = netdevs_.find({netns, ifname});
  if (it == netdevs_.end()) return missing({netns, ifname});
  auto& list = it->second.routes;
  if (std::any_of(list.begin(), list.end(),
                  [&](const sys::IpRoute& r) { return sameRoute(r, route); })) {
    return core::Status(core::StatusCode::kAlreadyExists, "File exists", 6 /* NLE_EXIST */);
  }
  list.push_back(route);
  return core::Status::ok();
}

}  // namespace fabric_chaos::fakes
