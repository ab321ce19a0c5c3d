#include "tests/fakes/fake_links.h"

namespace fabric_chaos::fakes {
namespace {

std::string operstateOf(const sys::LinkInfo& info) {
  if (!info.admin_up) return "down";
  return info.carrier ? "up" : "lowerlayerdown";
}

core::Status noSuchDevice(const std::string& netns, const std::string& ifname) {
  return core::Status(core::StatusCode::kNotFound,
                      "no such device " + ifname + " in netns " + netns, 31 /* NLE_NODEV */);
}

}  // namespace

void FakeLinks::addLink(const std::string& netns, sys::LinkInfo info) {
  std::lock_guard<std::mutex> lock(mu_);
  if (info.ifindex == 0) info.ifindex = next_ifindex_++;
  if (info.operstate.empty()) info.operstate = operstateOf(info);
  links_[{netns, info.ifname}] = info;
}

void FakeLinks::removeLink(const std::string& netns, const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  links_.erase({netns, ifname});
}

std::optional<sys::LinkInfo> FakeLinks::link(const std::string& netns,
                                             const std::string& ifname) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = links_.find({netns, ifname});
  if (it == links_.end()) return std::nullopt;
  return it->second;
}

void FakeLinks::failOnCall(int n, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  schedule_.failOn(n, std::move(status));
}

int FakeLinks::mutatingCalls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return schedule_.calls();
}

std::vector<std::string> FakeLinks::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

core::Result<sys::LinkInfo> FakeLinks::getLink(const std::string& netns,
                                               const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("getLink " + netns + "/" + ifname);
  auto it = links_.find({netns, ifname});
  if (it == links_.end()) return noSuchDevice(netns, ifname);
  return it->second;
}

core::Result<std::vector<sys::LinkInfo>> FakeLinks::listLinks(const std::string& netns) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("listLinks " + netns);
  std::vector<sys::LinkInfo> out;
  for (const auto& [key, info] : links_) {
    if (key.first == netns) out.push_back(info);  // the map is ordered by (netns, ifname)
  }
  return out;
}

core::Status FakeLinks::setAdminUp(const std::string& netns, const std::string& ifname, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("setAdminUp " + netns + "/" + ifname + (up ? " up" : " down"));
  if (auto failure = schedule_.next()) return *failure;
  auto it = links_.find({netns, ifname});
  if (it == links_.end()) return noSuchDevice(netns, ifname);
  it->second.admin_up = up;
  it->second.carrier = up;  // a veth peer that stays up: carrier follows our admin state
  it->second.operstate = operstateOf(it->second);
  return core::Status::ok();
}

core::Status FakeLinks::setMtu(const std::string& netns, const std::string& ifname, uint32_t mtu) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("setMtu " + netns + "/" + ifname + " " + std::to_string(mtu));
  if (auto failure = schedule_.next()) return *failure;
  auto it = links_.find({netns, ifname});
  if (it == links_.end()) return noSuchDevice(netns, ifname);
  it->second.mtu = mtu;
  return core::Status::ok();
}

void FakeLinks::setIpv4(const std::string& netns, const std::string& ifname,
                        std::vector<std::string> addresses) {
  std::lock_guard<std::mutex> lock(mu_);
  ipv4_[{netns, ifname}] = std::move(addresses);
}

core::Result<std::vector<std::string>> FakeLinks::ipv4Addresses(const std::string& netns,
                                                                const std::string& ifname) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back("ipv4Addresses " + netns + "/" + ifname);
  if (links_.count({netns, ifname}) == 0) return noSuchDevice(netns, ifname);
  auto it = ipv4_.find({netns, ifname});
  return it == ipv4_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace fabric_chaos::fakes
