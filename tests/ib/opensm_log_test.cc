// OpenSM's "Entering MASTER state" lines, as 3.3.23 writes them, read as wall-clock times.

#include "ib/opensm_log.h"

#include <gtest/gtest.h>
#include <time.h>

namespace fabric_chaos::ib {
namespace {

// The local-time stamp OpenSM would write for `t` (seconds) and `usec`.
std::string stamp(time_t t, int usec) {
  tm when{};
  localtime_r(&t, &when);
  char text[64];
  strftime(text, sizeof(text), "%b %d %H:%M:%S", &when);
  return std::string(text) + " " + std::to_string(usec);
}

TEST(OpenSmLog, FindsTheFirstMasterTransitionAfterAnInstant) {
  const time_t base = time(nullptr) - 3600;
  const std::string log = stamp(base, 100) + " [14E1D6C0] 0x80 -> Entering DISCOVERING state\n" +
                          stamp(base + 1, 656289) + " [14E1D6C0] 0x80 -> Entering MASTER state\n" +
                          stamp(base + 60, 5) + " [14E1D6C0] 0x80 -> Entering MASTER state\n" +
                          "garbage line without a stamp Entering MASTER state\n";
  const double base_ms = static_cast<double>(base) * 1000.0;
  auto first = enteredMasterAtMs(log, base_ms);
  ASSERT_TRUE(first.has_value());
  EXPECT_NEAR(*first, base_ms + 1656.289, 0.001);
  // After the first one: the second.
  auto later = enteredMasterAtMs(log, base_ms + 2000);
  ASSERT_TRUE(later.has_value());
  EXPECT_NEAR(*later, base_ms + 60000.005, 0.001);
  EXPECT_FALSE(enteredMasterAtMs(log, base_ms + 61000).has_value());
  EXPECT_FALSE(enteredMasterAtMs("", 0).has_value());
}

}  // namespace
}  // namespace fabric_chaos::ib
