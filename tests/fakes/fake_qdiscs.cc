#include "tests/fakes/fake_qdiscs.h"

namespace fabric_chaos::fakes {

void FakeQdiscs::failOnCall(int n, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  schedule_.failOn(n, std::move(status));
}

int FakeQdiscs::mutatingCalls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return schedule_.calls();
}

void FakeQdiscs::setProbeResult(const std::string& kind, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  probe_results_[kind] = std::move(status);
}

std::vector<std::string> FakeQdiscs::probedKinds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return probed_;
}

void FakeQdiscs::setRoot(const std::string& netns, const std::string& ifname,
                         std::optional<sys::QdiscInfo> root) {
  std::lock_guard<std::mutex> lock(mu_);
  if (root) {
    roots_[{netns, ifname}] = *root;
  } else {
    roots_.erase({netns, ifname});
  }
}

std::optional<sys::QdiscInfo> FakeQdiscs::root(const std::string& netns,
                                               const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = roots_.find({netns, ifname});
  if (it == roots_.end()) return std::nullopt;
  return it->second;
}

std::optional<sys::NetemSpec> FakeQdiscs::netem(const std::string& netns,
                                                const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = netem_.find({netns, ifname});
  if (it == netem_.end()) return std::nullopt;
  return it->second;
}

core::Result<std::optional<sys::QdiscInfo>> FakeQdiscs::getRoot(const std::string& netns,
                                                                const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = roots_.find({netns, ifname});
  if (it == roots_.end()) return std::optional<sys::QdiscInfo>();
  return std::optional<sys::QdiscInfo>(it->second);
}

core::Status FakeQdiscs::replaceRootNetem(const std::string& netns, const std::string& ifname,
                                          const sys::NetemSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto failure = schedule_.next()) return *failure;
  roots_[{netns, ifname}] = sys::QdiscInfo{"netem", 0, 0};
  netem_[{netns, ifname}] = spec;
  return core::Status::ok();
}

core::Status FakeQdiscs::deleteRoot(const std::string& netns, const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto failure = schedule_.next()) return *failure;
  roots_.erase({netns, ifname});
  netem_.erase({netns, ifname});
  return core::Status::ok();
}

core::Status FakeQdiscs::probeKind(const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  probed_.push_back(kind);
  auto it = probe_results_.find(kind);
  return it == probe_results_.end() ? core::Status::ok() : it->second;
}

}  // namespace fabric_chaos::fakes
