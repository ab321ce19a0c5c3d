#include "tests/fakes/fake_qdiscs.h"

namespace fabric_chaos::fakes {
namespace {

constexpr uint16_t kOptions = 2;  // TCA_OPTIONS

const std::vector<uint8_t>* optionsOf(const std::vector<sys::RawAttribute>& attributes) {
  for (const sys::RawAttribute& attribute : attributes) {
    if (attribute.type == kOptions) return &attribute.data;
  }
  return nullptr;
}

}  // namespace

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
    roots_[{netns, ifname}].info = *root;
  } else {
    roots_.erase({netns, ifname});
  }
}

void FakeQdiscs::installRoot(const std::string& netns, const std::string& ifname,
                             sys::SavedQdisc qdisc) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry;
  entry.info.kind = qdisc.kind;
  entry.info.handle = qdisc.handle;
  entry.attributes = std::move(qdisc.attributes);
  entry.unrestorable = std::move(qdisc.unrestorable);
  roots_[{netns, ifname}] = std::move(entry);
  netem_.erase({netns, ifname});
}

void FakeQdiscs::setCounters(const std::string& netns, const std::string& ifname,
                             const sys::QdiscInfo& counters) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = roots_.find({netns, ifname});
  if (it == roots_.end()) return;
  sys::QdiscInfo& info = it->second.info;
  info.packets = counters.packets;
  info.bytes = counters.bytes;
  info.drops = counters.drops;
  info.overlimits = counters.overlimits;
  info.requeues = counters.requeues;
  info.qlen = counters.qlen;
  info.backlog = counters.backlog;
}

void FakeQdiscs::removeDevice(const std::string& netns, const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  removed_.insert({netns, ifname});
  roots_.erase({netns, ifname});
  netem_.erase({netns, ifname});
}

std::optional<sys::QdiscInfo> FakeQdiscs::root(const std::string& netns,
                                               const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = roots_.find({netns, ifname});
  if (it == roots_.end()) return std::nullopt;
  return it->second.info;
}

std::optional<sys::NetemSpec> FakeQdiscs::netem(const std::string& netns,
                                                const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = netem_.find({netns, ifname});
  if (it == netem_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> FakeQdiscs::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

core::Status FakeQdiscs::missing(const Key& key) const {
  if (removed_.count(key) == 0) return core::Status::ok();
  return core::Status(core::StatusCode::kNotFound, "no such device " + key.second, 19);
}

core::Result<std::optional<sys::QdiscInfo>> FakeQdiscs::getRoot(const std::string& netns,
                                                                const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  FC_RETURN_IF_ERROR(missing({netns, ifname}));
  auto it = roots_.find({netns, ifname});
  if (it == roots_.end()) return std::optional<sys::QdiscInfo>();
  sys::QdiscInfo info = it->second.info;
  if (info.options.empty()) {
    if (const std::vector<uint8_t>* options = optionsOf(it->second.attributes)) {
      info.options = *options;
    }
  }
  return std::optional<sys::QdiscInfo>(info);
}

core::Status FakeQdiscs::replaceRootNetem(const std::string& netns, const std::string& ifname,
                                          const sys::NetemSpec& spec) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto failure = schedule_.next()) return *failure;
  const Key key{netns, ifname};
  FC_RETURN_IF_ERROR(missing(key));
  FC_RETURN_IF_ERROR(sys::validateNetemSpec(spec));
  auto it = roots_.find(key);
  const bool in_place = it != roots_.end() && it->second.info.kind == "netem";
  Entry entry;
  if (in_place) {
    entry.info = it->second.info;  // same handle, counters kept
  } else {
    entry.info.kind = "netem";
    entry.info.handle = next_handle_;
    next_handle_ += 0x10000;
  }
  entry.info.options.clear();
  entry.attributes = {
      sys::RawAttribute{kOptions, sys::encodeNetemOptions(sys::netemAttributes(spec))}};
  log_.push_back(std::string(in_place ? "netem change " : "netem create ") +
                 sys::formatQdiscHandle(entry.info.handle));
  roots_[key] = std::move(entry);
  netem_[key] = spec;
  return core::Status::ok();
}

core::Status FakeQdiscs::deleteRoot(const std::string& netns, const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto failure = schedule_.next()) return *failure;
  FC_RETURN_IF_ERROR(missing({netns, ifname}));
  roots_.erase({netns, ifname});
  netem_.erase({netns, ifname});
  log_.push_back("delete");
  return core::Status::ok();
}

core::Result<std::optional<sys::SavedQdisc>> FakeQdiscs::saveRoot(const std::string& netns,
                                                                  const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  FC_RETURN_IF_ERROR(missing({netns, ifname}));
  auto it = roots_.find({netns, ifname});
  if (it == roots_.end()) return std::optional<sys::SavedQdisc>();
  sys::SavedQdisc saved;
  saved.kind = it->second.info.kind;
  saved.handle = it->second.info.handle;
  saved.attributes = it->second.attributes;
  saved.unrestorable = it->second.unrestorable;
  return std::optional<sys::SavedQdisc>(std::move(saved));
}

core::Status FakeQdiscs::restoreRoot(const std::string& netns, const std::string& ifname,
                                     const sys::SavedQdisc& saved) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto failure = schedule_.next()) return *failure;
  const Key key{netns, ifname};
  FC_RETURN_IF_ERROR(missing(key));
  if (saved.isKernelDefault()) return core::Status::ok();
  auto it = roots_.find(key);
  if (it != roots_.end() && it->second.info.handle != 0) {
    return core::Status(core::StatusCode::kAlreadyExists,
                        "NLM_F_REPLACE needed to override root qdisc " + it->second.info.kind, 6);
  }
  Entry entry;
  entry.info.kind = saved.kind;
  entry.info.handle = saved.handle;
  entry.attributes = saved.attributes;
  roots_[key] = std::move(entry);
  netem_.erase(key);
  log_.push_back("restore " + saved.kind + " " + sys::formatQdiscHandle(saved.handle));
  return core::Status::ok();
}

core::Status FakeQdiscs::probeKind(const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  probed_.push_back(kind);
  auto it = probe_results_.find(kind);
  return it == probe_results_.end() ? core::Status::ok() : it->second;
}

}  // namespace fabric_chaos::fakes
