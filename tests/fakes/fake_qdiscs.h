#pragma once
// In-memory sys::Qdiscs: a root qdisc per (netns, ifname) and the last netem spec applied.
// Mutating calls (replaceRootNetem, deleteRoot) are counted for failOnCall(). probeKind()
// answers from setProbeResult() (default OK). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "injectors/sys/qdisc.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeQdiscs : public sys::Qdiscs {
 public:
  // The nth mutating call (1-based) fails with status and changes nothing.
  void failOnCall(int n, core::Status status);
  int mutatingCalls() const;
  void setProbeResult(const std::string& kind, core::Status status);
  std::vector<std::string> probedKinds() const;
  void setRoot(const std::string& netns, const std::string& ifname,
               std::optional<sys::QdiscInfo> root);
  std::optional<sys::QdiscInfo> root(const std::string& netns, const std::string& ifname) const;
  std::optional<sys::NetemSpec> netem(const std::string& netns, const std::string& ifname) const;

  core::Result<std::optional<sys::QdiscInfo>> getRoot(const std::string& netns,
                                                      const std::string& ifname) override;
  core::Status replaceRootNetem(const std::string& netns, const std::string& ifname,
                                const sys::NetemSpec& spec) override;
  core::Status deleteRoot(const std::string& netns, const std::string& ifname) override;
  core::Status probeKind(const std::string& kind) override;

 private:
  using Key = std::pair<std::string, std::string>;
  mutable std::mutex mu_;
  std::map<Key, sys::QdiscInfo> roots_;
  std::map<Key, sys::NetemSpec> netem_;
  std::map<std::string, core::Status> probe_results_;
  std::vector<std::string> probed_;
  FailSchedule schedule_;
};

}  // namespace fabric_chaos::fakes
