#pragma once
// In-memory sys::LinkControl: links keyed by (netns, ifname), every call logged. Mutating calls
// (setAdminUp, setMtu) are counted for failOnCall(). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "injectors/sys/links.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeLinks : public sys::LinkControl {
 public:
  // Adds or replaces a link; ifindex 0 gets the next free index; operstate follows admin_up
  // and carrier when empty.
  void addLink(const std::string& netns, sys::LinkInfo info);
  void removeLink(const std::string& netns, const std::string& ifname);
  std::optional<sys::LinkInfo> link(const std::string& netns, const std::string& ifname) const;

  // The IPv4 addresses ipv4Addresses() returns for an existing link (none by default).
  void setIpv4(const std::string& netns, const std::string& ifname,
               std::vector<std::string> addresses);

  // The nth setAdminUp call (1-based) fails with status and changes nothing.
  void failOnCall(int n, core::Status status);
  int mutatingCalls() const;
  // "getLink ns/if", "setAdminUp ns/if up|down", "listLinks ns"
  std::vector<std::string> calls() const;

  core::Result<sys::LinkInfo> getLink(const std::string& netns, const std::string& ifname) override;
  core::Status setAdminUp(const std::string& netns, const std::string& ifname, bool up) override;
  // Counted for failOnCall() like setAdminUp; logged as "setMtu ns/if 9000".
  core::Status setMtu(const std::string& netns, const std::string& ifname, uint32_t mtu) override;
  // Every link added in netns, sorted by name; an unknown namespace is an empty list.
  core::Result<std::vector<sys::LinkInfo>> listLinks(const std::string& netns) override;
  core::Result<std::vector<std::string>> ipv4Addresses(const std::string& netns,
                                                       const std::string& ifname) override;

 private:
  using Key = std::pair<std::string, std::string>;
  mutable std::mutex mu_;
  std::map<Key, sys::LinkInfo> links_;
  std::map<Key, std::vector<std::string>> ipv4_;
  std::vector<std::string> calls_;
  FailSchedule schedule_;
  int next_ifindex_ = 2;
};

}  // namespace fabric_chaos::fakes
