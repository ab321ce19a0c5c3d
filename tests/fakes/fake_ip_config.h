#pragma once
// In-memory sys::IpConfig: addresses and routes by (netns, ifname), every call logged. It does
// not play the kernel's side effects (routes flushed with the last address, IPv6 addresses with
// a link-down): tests that need them set the state with setAddresses()/setRoutes(). Mutating
// calls are counted for failOnCall(). Thread-safe.

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "injectors/sys/ip_config.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeIpConfig : public sys::IpConfig {
 public:
  // Makes ifname exist in netns (with nothing on it) or replaces what it has.
  void setAddresses(const std::string& netns, const std::string& ifname,
                    std::vector<sys::IpAddress> addresses);
  void setRoutes(const std::string& netns, const std::string& ifname,
                 std::vector<sys::IpRoute> routes);
  std::vector<sys::IpAddress> addressesOf(const std::string& netns,
                                          const std::string& ifname) const;
  std::vector<sys::IpRoute> routesOf(const std::string& netns, const std::string& ifname) const;

  // The nth addAddress, removeAddress or addRoute call (1-based) fails with status.
  void failOnCall(int n, core::Status status);
  // "addAddress /eth0 10.0.2.15/24", "removeAddress /eth0 10.0.2.15/24",
  // "addRoute /eth0 10.9.0.0/16 table 254", "addresses /eth0", "routes /eth0"
  std::vector<std::string> calls() const;

  core::Result<std::vector<sys::IpAddress>> addresses(const std::string& netns,
                                                      const std::string& ifname) override;
  // Appends; kAlreadyExists when the netdev has an address with the same family and local one.
  core::Status addAddress(const std::string& netns, const std::string& ifname,
                          const sys::IpAddress& address) override;
  core::Status removeAddress(const std::string& netns, const std::string& ifname,
                             const sys::IpAddress& address) override;
  core::Result<std::vector<sys::IpRoute>> routes(const std::string& netns,
                                                 const std::string& ifname) override;
  // kAlreadyExists for a route with the same family, table, destination, tos and priority.
  core::Status addRoute(const std::string& netns, const std::string& ifname,
                        const sys::IpRoute& route) override;

 private:
  using Key = std::pair<std::string, std::string>;
  struct Netdev {
    std::vector<sys::IpAddress> addresses;
    std::vector<sys::IpRoute> routes;
  };
  core::Status missing(const Key& key) const;

  mutable std::mutex mu_;
  std::map<Key, Netdev> netdevs_;
  std::vector<std::string> calls_;
  FailSchedule schedule_;
};

}  // namespace fabric_chaos::fakes
