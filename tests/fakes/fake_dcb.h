#pragma once
// In-memory sys::Dcb: PFC settings keyed by (netns, ifname), devices that answer like a veth
// (kNotSupported naming EOPNOTSUPP), every call logged. setIeeePfc calls are counted for
// failOnCall() and recorded, failed ones included. Errors carry the codes and errnos the kernel
// adapter returns. Thread-safe.

#include <cerrno>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "injectors/sys/dcb.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeDcb : public sys::Dcb {
 public:
  struct SetCall {
    std::string netns;
    std::string ifname;
    sys::IeeePfc pfc;
  };

  // A DCB-capable device with this configuration (replacing any earlier one).
  void addDevice(const std::string& netns, const std::string& ifname, sys::IeeePfc pfc = {}) {
    std::lock_guard<std::mutex> lock(mu_);
    unsupported_.erase({netns, ifname});
    devices_[{netns, ifname}] = pfc;
  }
  // A device without DCB ops (veth, virtio-net): both calls are kNotSupported.
  void addUnsupportedDevice(const std::string& netns, const std::string& ifname) {
    std::lock_guard<std::mutex> lock(mu_);
    devices_.erase({netns, ifname});
    unsupported_.insert({netns, ifname});
  }
  void removeDevice(const std::string& netns, const std::string& ifname) {
    std::lock_guard<std::mutex> lock(mu_);
    devices_.erase({netns, ifname});
    unsupported_.erase({netns, ifname});
  }
  std::optional<sys::IeeePfc> pfc(const std::string& netns, const std::string& ifname) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = devices_.find({netns, ifname});
    if (it == devices_.end()) return std::nullopt;
    return it->second;
  }

  // Models a driver with DCB ops but no ieee_setpfc: the kernel answers success and nothing
  // changes.
  void ignoreSets(bool ignore) {
    std::lock_guard<std::mutex> lock(mu_);
    ignore_sets_ = ignore;
  }
  // The nth setIeeePfc call (1-based) fails with status and changes nothing.
  void failOnCall(int n, core::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    schedule_.failOn(n, std::move(status));
  }
  int mutatingCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return schedule_.calls();
  }
  std::vector<SetCall> setCalls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return set_calls_;
  }
  // "getIeeePfc ns/if", "setIeeePfc ns/if en=0x08"
  std::vector<std::string> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  core::Result<sys::IeeePfc> getIeeePfc(const std::string& netns,
                                        const std::string& ifname) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("getIeeePfc " + netns + "/" + ifname);
    if (unsupported_.count({netns, ifname}) != 0) return notSupported(netns, ifname, "RTM_GETDCB");
    auto it = devices_.find({netns, ifname});
    if (it == devices_.end()) return noSuchDevice(netns, ifname);
    return it->second;
  }

  core::Status setIeeePfc(const std::string& netns, const std::string& ifname,
                          const sys::IeeePfc& pfc) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("setIeeePfc " + netns + "/" + ifname + " en=" + hexByte(pfc.pfc_en));
    set_calls_.push_back(SetCall{netns, ifname, pfc});
    if (auto failure = schedule_.next()) return *failure;
    if (unsupported_.count({netns, ifname}) != 0) return notSupported(netns, ifname, "RTM_SETDCB");
    auto it = devices_.find({netns, ifname});
    if (it == devices_.end()) return noSuchDevice(netns, ifname);
    if (ignore_sets_) return core::Status::ok();
    // Drivers take the configuration; the frame counters stay theirs.
    it->second.pfc_cap = pfc.pfc_cap;
    it->second.pfc_en = pfc.pfc_en;
    it->second.mbc = pfc.mbc;
    it->second.delay = pfc.delay;
    return core::Status::ok();
  }

 private:
  bool ignore_sets_ = false;
  using Key = std::pair<std::string, std::string>;

  static std::string hexByte(uint8_t value) {
    const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[value >> 4] + digits[value & 0xf];
  }
  static std::string inNetns(const std::string& netns) {
    return netns.empty() ? std::string() : " in netns " + netns;
  }
  static core::Status notSupported(const std::string& netns, const std::string& ifname,
                                   const char* message) {
    return core::Status(
        core::StatusCode::kNotSupported,
        ifname + inNetns(netns) + " has no DCB support (EOPNOTSUPP from " + message + ")",
        EOPNOTSUPP);
  }
  static core::Status noSuchDevice(const std::string& netns, const std::string& ifname) {
    return core::Status(core::StatusCode::kNotFound,
                        "no such device " + ifname + " in " +
                            (netns.empty() ? std::string("the host namespace") : "netns " + netns),
                        ENODEV);
  }

  mutable std::mutex mu_;
  std::map<Key, sys::IeeePfc> devices_;
  std::set<Key> unsupported_;
  std::vector<SetCall> set_calls_;
  std::vector<std::string> calls_;
  FailSchedule schedule_;
};

}  // namespace fabric_chaos::fakes
