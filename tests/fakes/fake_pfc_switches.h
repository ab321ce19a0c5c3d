#pragma once
// In-memory sys::PfcSwitchControl: the ports of running lab-switch PFC agents, keyed
// "netns/port", with their settings; every change is recorded as "netns/port pfc_enabled=0xf7" or
// "netns/port watchdog=drop:200:200" (or "watchdog=off"). A test may set fail_with to make the
// next changes fail. Not thread-safe.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "injectors/sys/pfc_switch_control.h"

namespace fabric_chaos::fakes {

class FakePfcSwitches : public sys::PfcSwitchControl {
 public:
  core::Result<injectors::PfcPortSettings> read(const std::string& netns,
                                                const std::string& port) override {
    auto it = ports.find(key(netns, port));
    if (it == ports.end()) {
      return core::Status(core::StatusCode::kNotFound, "no PFC agent runs in namespace " + netns);
    }
    return it->second;
  }
  core::Status setPfcEnabled(const std::string& netns, const std::string& port,
                             uint8_t mask) override {
    if (!fail_with.isOk()) return fail_with;
    auto it = ports.find(key(netns, port));
    if (it == ports.end()) return core::Status(core::StatusCode::kNotFound, "no port " + port);
    it->second.pfc_enabled = mask;
    char text[8];
    std::snprintf(text, sizeof(text), "0x%02x", mask);
    changes.push_back(key(netns, port) + " pfc_enabled=" + text);
    return core::Status::ok();
  }
  core::Status setWatchdog(const std::string& netns, const std::string& port,
                           const std::optional<injectors::PfcWatchdogConfig>& watchdog) override {
    if (!fail_with.isOk()) return fail_with;
    auto it = ports.find(key(netns, port));
    if (it == ports.end()) return core::Status(core::StatusCode::kNotFound, "no port " + port);
    it->second.watchdog = watchdog;
    changes.push_back(key(netns, port) +
                      " watchdog=" + (watchdog ? injectors::formatPfcWatchdog(*watchdog) : "off"));
    return core::Status::ok();
  }

  static std::string key(const std::string& netns, const std::string& port) {
    return netns + "/" + port;
  }

  std::map<std::string, injectors::PfcPortSettings> ports;
  std::vector<std::string> changes;
  core::Status fail_with;
};

}  // namespace fabric_chaos::fakes
