#pragma once
// In-memory sys::Qdiscs: per (netns, ifname) a root qdisc (absent = the kernel's default) with
// its handle, counters and configuration attributes, the last netem spec applied, and a log of
// the mutating calls. It behaves like the kernel where the injectors depend on it: a root netem
// is changed in place (same handle), anything else is replaced by a netem with a new handle,
// restoreRoot() refuses to override a non-default root, a removed device answers kNotFound.
// Mutating calls (replaceRootNetem, deleteRoot, restoreRoot) are counted for failOnCall();
// probeKind() answers from setProbeResult() (default OK). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <set>
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
  // Replaces the root's kind and counters (nullopt: back to the kernel default).
  void setRoot(const std::string& netns, const std::string& ifname,
               std::optional<sys::QdiscInfo> root);
  // Installs a user's root qdisc as saveRoot() will report it.
  void installRoot(const std::string& netns, const std::string& ifname, sys::SavedQdisc qdisc);
  // Sets only the counters of the current root (packets, bytes, drops, ...).
  void setCounters(const std::string& netns, const std::string& ifname,
                   const sys::QdiscInfo& counters);
  void removeDevice(const std::string& netns, const std::string& ifname);
  std::optional<sys::QdiscInfo> root(const std::string& netns, const std::string& ifname) const;
  std::optional<sys::NetemSpec> netem(const std::string& netns, const std::string& ifname) const;
  // The mutating calls that succeeded: "netem create 8001:0", "netem change 8001:0", "delete",
  // "restore tbf 1:0".
  std::vector<std::string> log() const;

  core::Result<std::optional<sys::QdiscInfo>> getRoot(const std::string& netns,
                                                      const std::string& ifname) override;
  core::Status replaceRootNetem(const std::string& netns, const std::string& ifname,
                                const sys::NetemSpec& spec) override;
  core::Status deleteRoot(const std::string& netns, const std::string& ifname) override;
  core::Result<std::optional<sys::SavedQdisc>> saveRoot(const std::string& netns,
                                                        const std::string& ifname) override;
  core::Status restoreRoot(const std::string& netns, const std::string& ifname,
                           const sys::SavedQdisc& saved) override;
  core::Status probeKind(const std::string& kind) override;

 private:
  using Key = std::pair<std::string, std::string>;
  struct Entry {
    sys::QdiscInfo info;
    std::vector<sys::RawAttribute> attributes;
    std::string unrestorable;
  };
  core::Status missing(const Key& key) const;

  mutable std::mutex mu_;
  std::map<Key, Entry> roots_;
  std::map<Key, sys::NetemSpec> netem_;
  std::set<Key> removed_;
  std::map<std::string, core::Status> probe_results_;
  std::vector<std::string> probed_;
  std::vector<std::string> log_;
  uint32_t next_handle_ = 0x80010000U;
  FailSchedule schedule_;
};

}  // namespace fabric_chaos::fakes
