#include "tests/support/ci_skip_policy.h"

#include <cstdlib>

namespace fabric_chaos::testing {

bool ciEnvironment() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

void SkipLedger::recordSkip(const std::string& name, const std::string& reason) {
  skips_.push_back(reason.empty() ? name : name + ": " + reason);
}

int SkipLedger::exitCode(int gtest_exit_code) const {
  if (gtest_exit_code != 0) return gtest_exit_code;
  return in_ci_ && !skips_.empty() ? 1 : 0;
}

std::string SkipLedger::lineForSkip(const std::string& name, const std::string& reason) const {
  if (!in_ci_) return "";
  return "[  FAILED  ] " + name + " skipped, and under CI=true a skip is a failure" +
         (reason.empty() ? std::string(" (no reason given)") : ": " + reason) + "\n";
}

std::string SkipLedger::summary() const {
  if (skips_.empty()) return "";
  const std::string count =
      std::to_string(skips_.size()) + " test" + (skips_.size() == 1 ? "" : "s") + " skipped";
  if (!in_ci_) {
    return "[ CI-SKIP  ] " + count + " (outside CI; with CI=true each would be a failure)\n";
  }
  std::string out = "[ CI-SKIP  ] " + count +
                    " under CI=true, so this program fails. Install or enable what each one "
                    "names (deploy/install-deps.sh):\n";
  for (const std::string& skip : skips_) out += "[ CI-SKIP  ]   " + skip + "\n";
  return out;
}

void CiSkipPolicy::OnTestSuiteStart(const ::testing::TestSuite& suite) { suite_ = suite.name(); }

void CiSkipPolicy::OnTestStart(const ::testing::TestInfo&) {
  in_test_ = true;
  skip_reason_.clear();
}

void CiSkipPolicy::OnTestPartResult(const ::testing::TestPartResult& result) {
  if (!result.skipped()) return;
  if (!in_test_) {
    // GTEST_SKIP in SetUpTestSuite or an Environment: gtest 1.12 runs the tests anyway and
    // reports none of them skipped, so this is the only trace of it.
    const std::string where =
        suite_.empty() ? "(global environment)" : suite_ + " (outside any test: suite set-up)";
    ledger_.recordSkip(where, result.message());
    out_ << ledger_.lineForSkip(where, result.message()) << std::flush;
    return;
  }
  if (!skip_reason_.empty()) skip_reason_ += "; ";
  skip_reason_ += result.message();
}

void CiSkipPolicy::OnTestEnd(const ::testing::TestInfo& info) {
  in_test_ = false;
  const ::testing::TestResult* result = info.result();
  if (result == nullptr || !result->Skipped()) return;
  const std::string name = std::string(info.test_suite_name()) + "." + info.name();
  ledger_.recordSkip(name, skip_reason_);
  out_ << ledger_.lineForSkip(name, skip_reason_) << std::flush;
}

void CiSkipPolicy::OnTestProgramEnd(const ::testing::UnitTest&) {
  suite_.clear();
  out_ << ledger_.summary() << std::flush;
}

}  // namespace fabric_chaos::testing
