// A test program for tests/support/ci_skip_policy_test.cc, linked with the shared gtest main: one
// passing test, one that skips with a reason, and a suite whose SetUpTestSuite skips. Not a ctest
// test itself (under CI=true it must fail, by design).

#include <gtest/gtest.h>

namespace {

TEST(Probe, Passes) { EXPECT_EQ(1 + 1, 2); }

TEST(Probe, Skips) { GTEST_SKIP() << "probe: the frobnicator is missing"; }

class SuiteSkip : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { GTEST_SKIP() << "probe: no suite-wide widget"; }
};

TEST_F(SuiteSkip, RunsAnyway) { SUCCEED(); }

}  // namespace
