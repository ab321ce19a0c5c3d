#pragma once
// In CI nothing is skipped silently (the house style: "when a tier's prerequisite is missing in CI,
// the test fails and says what is missing"). Every test executable links
// tests/support/gtest_main.cc, which installs CiSkipPolicy: with CI=true in the environment a
// skipped test makes the executable exit non-zero, and each skip is printed as a failure with its
// reason; without it a skip stays a skip (gtest prints its message). The ledger is pure and
// unit-tested; the listener only feeds it. Single-threaded: gtest calls listeners from the main
// thread.

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace fabric_chaos::testing {

// True when the environment variable CI is exactly "true" (what CI systems and .ci/run set).
bool ciEnvironment();

// The skips of one test program and what they mean for its exit code.
class SkipLedger {
 public:
  explicit SkipLedger(bool in_ci) : in_ci_(in_ci) {}

  // name: "Suite.Test"; reason: the GTEST_SKIP message ("" when it had none).
  void recordSkip(const std::string& name, const std::string& reason);

  bool inCi() const { return in_ci_; }
  const std::vector<std::string>& skips() const { return skips_; }  // "Suite.Test: reason"

  // gtest's own exit code, or 1 when it was 0 but a test skipped under CI.
  int exitCode(int gtest_exit_code) const;
  // The closing lines: under CI each skip as a failure and what to do; outside CI one line
  // counting the skips. "" when nothing skipped.
  std::string summary() const;
  // The line printed as soon as a test skipped under CI ("" outside CI).
  std::string lineForSkip(const std::string& name, const std::string& reason) const;

 private:
  bool in_ci_;
  std::vector<std::string> skips_;
};

// Feeds a SkipLedger from gtest's events and prints to `out`. Append it to gtest's listeners
// (which then own it) and ask ledger().exitCode() for main's exit code.
class CiSkipPolicy : public ::testing::EmptyTestEventListener {
 public:
  CiSkipPolicy(bool in_ci, std::ostream& out) : ledger_(in_ci), out_(out) {}

  void OnTestSuiteStart(const ::testing::TestSuite& suite) override;
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestPartResult(const ::testing::TestPartResult& result) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;
  void OnTestProgramEnd(const ::testing::UnitTest& unit_test) override;

  const SkipLedger& ledger() const { return ledger_; }

 private:
  SkipLedger ledger_;
  std::ostream& out_;
  // Never calls back into ::testing::UnitTest here: gtest holds its lock while it reports a
  // result, so the listener tracks where it is itself.
  std::string suite_;        // the running suite
  bool in_test_ = false;     // between OnTestStart and OnTestEnd
  std::string skip_reason_;  // of the running test
};

}  // namespace fabric_chaos::testing
