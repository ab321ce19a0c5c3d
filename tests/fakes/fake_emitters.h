#pragma once
// In-memory sys::Emitters: start() records the spec and marks the key running with a canned
// report; stop() records "<key> <grace_ms>" and forgets the key. A test may set start_result, or
// fail_key to make the start of one key fail. Not thread-safe (the injectors call it from one
// thread).

#include <map>
#include <string>
#include <vector>

#include "injectors/sys/emitters.h"

namespace fabric_chaos::fakes {

class FakeEmitters : public sys::Emitters {
 public:
  core::Status start(const sys::EmitterSpec& spec) override {
    if (!start_result.isOk()) return start_result;
    if (spec.key == fail_key) return core::Status(core::StatusCode::kInternal, "cannot start");
    started.push_back(spec);
    if (running.count(spec.key) == 0) running[spec.key] = {true, 4242, {}, report, 1, ""};
    return core::Status::ok();
  }
  core::Result<sys::EmitterState> state(const std::string& key) override {
    auto it = running.find(key);
    if (it == running.end()) {
      return core::Status(core::StatusCode::kNotFound, "no emitter " + key);
    }
    return it->second;
  }
  core::Result<sys::EmitterState> stop(const std::string& key, int grace_ms) override {
    stopped.push_back(key + " " + std::to_string(grace_ms));
    running.erase(key);
    return sys::EmitterState{};
  }
  int stopRecorded(int) override { return 0; }

  core::Status start_result;
  std::string fail_key;
  nlohmann::json report = {{"frames", 7}};  // every started emitter's last report
  std::vector<sys::EmitterSpec> started;
  std::vector<std::string> stopped;
  std::map<std::string, sys::EmitterState> running;
};

}  // namespace fabric_chaos::fakes
