#pragma once
// A RandomSource for tests: a counter pattern (byte i of call n is n + i), so two secrets differ
// and a test can predict them; any call can be told to fail with FailSchedule. Not thread-safe.

#include <cstddef>
#include <cstdint>

#include "server/auth/random_source.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeRandomSource : public auth::RandomSource {
 public:
  core::Status fill(uint8_t* out, size_t size) override {
    if (auto failure = failures.next()) return *failure;
    ++fills_;
    for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(fills_ + i);
    return core::Status::ok();
  }
  int fills() const { return fills_; }

  FailSchedule failures;

 private:
  int fills_ = 0;
};

}  // namespace fabric_chaos::fakes
