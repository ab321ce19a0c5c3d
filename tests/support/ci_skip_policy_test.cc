// The CI skip policy: the pure ledger, table-driven; then the real gtest main end to end, running
// tests/support/ci_skip_probe (which skips) with and without CI=true; then tests/support/
// ci_no_skip.sh, the same rule for node and shell tests.

#include "tests/support/ci_skip_policy.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace fabric_chaos::testing {
namespace {

struct ShellRun {
  int exit_code = -1;
  std::string out;
};

ShellRun shell(const std::string& command) {
  ShellRun run;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SkipLedger, ExitCodeTable) {
  struct Case {
    bool in_ci;
    int skips;
    int gtest_code;
    int want;
  };
  for (const Case& c :
       {Case{false, 0, 0, 0}, Case{false, 2, 0, 0}, Case{true, 0, 0, 0}, Case{true, 1, 0, 1},
        Case{true, 1, 1, 1}, Case{false, 0, 1, 1}, Case{true, 0, 3, 3}}) {
    SkipLedger ledger(c.in_ci);
    for (int i = 0; i < c.skips; ++i) ledger.recordSkip("S.T" + std::to_string(i), "why");
    EXPECT_EQ(ledger.exitCode(c.gtest_code), c.want)
        << "in_ci " << c.in_ci << ", skips " << c.skips << ", gtest " << c.gtest_code;
  }
}

TEST(SkipLedger, UnderCiEachSkipIsNamedWithItsReason) {
  SkipLedger ledger(true);
  EXPECT_EQ(ledger.summary(), "");
  ledger.recordSkip("Lab.Up", "setpriv is missing");
  ledger.recordSkip("Lab.Down", "");
  EXPECT_EQ(ledger.skips(), (std::vector<std::string>{"Lab.Up: setpriv is missing", "Lab.Down"}));
  const std::string summary = ledger.summary();
  EXPECT_TRUE(contains(summary, "2 tests skipped under CI=true, so this program fails")) << summary;
  EXPECT_TRUE(contains(summary, "Lab.Up: setpriv is missing\n")) << summary;
  EXPECT_EQ(ledger.lineForSkip("Lab.Up", "setpriv is missing"),
            "[  FAILED  ] Lab.Up skipped, and under CI=true a skip is a failure: setpriv is "
            "missing\n");
  EXPECT_TRUE(contains(ledger.lineForSkip("Lab.Down", ""), "(no reason given)"));
}

TEST(SkipLedger, OutsideCiASkipStaysASkip) {
  SkipLedger ledger(false);
  ledger.recordSkip("Lab.Up", "setpriv is missing");
  EXPECT_EQ(ledger.lineForSkip("Lab.Up", "setpriv is missing"), "");
  EXPECT_EQ(ledger.summary(),
            "[ CI-SKIP  ] 1 test skipped (outside CI; with CI=true each would be a failure)\n");
  EXPECT_EQ(ledger.exitCode(0), 0);
}

TEST(CiSkipPolicy, TheSharedMainFailsASkippingProgramOnlyUnderCi) {
  const std::string probe = FC_CI_SKIP_PROBE;
  ShellRun ci = shell("env CI=true " + probe);
  EXPECT_EQ(ci.exit_code, 1) << ci.out;
  EXPECT_TRUE(contains(ci.out,
                       "[  FAILED  ] Probe.Skips skipped, and under CI=true a skip is a "
                       "failure: probe: the frobnicator is missing"))
      << ci.out;
  EXPECT_TRUE(contains(ci.out, "SuiteSkip (outside any test: suite set-up)")) << ci.out;
  EXPECT_TRUE(contains(ci.out, "tests skipped under CI=true, so this program fails")) << ci.out;

  for (const std::string env : {"env -u CI ", "env CI=false ", "env CI=1 "}) {
    ShellRun dev = shell(env + probe);
    EXPECT_EQ(dev.exit_code, 0) << env << "\n" << dev.out;
    EXPECT_TRUE(contains(dev.out, "[  SKIPPED ] Probe.Skips")) << dev.out;
    EXPECT_TRUE(contains(dev.out, "probe: the frobnicator is missing")) << dev.out;
    EXPECT_FALSE(contains(dev.out, "[  FAILED  ]")) << dev.out;
  }

  // Nothing skipped: CI changes nothing.
  ShellRun clean = shell("env CI=true " + probe + " --gtest_filter=Probe.Passes");
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_FALSE(contains(clean.out, "CI-SKIP")) << clean.out;
  // Listing runs (and skips) nothing.
  ShellRun listed = shell("env CI=true " + probe + " --gtest_list_tests");
  EXPECT_EQ(listed.exit_code, 0) << listed.out;
}

TEST(CiNoSkipScript, NodeAndShellTestsFollowTheSameRule) {
  const std::string guard = std::string(FC_SOURCE_DIR_FOR_TESTS) + "/tests/support/ci_no_skip.sh";
  struct Case {
    std::string command;
    int want_outside_ci;
    int want_in_ci;
    std::string why_in_ci;  // part of the FAIL line, "" when it passes
  };
  const Case cases[] = {
      {"true", 0, 0, ""},
      {"exit 3", 3, 3, ""},
      {"echo SKIP: no chromium; exit 77", 77, 1, "it exited 77 (skipped)"},
      {"printf '# tests 3\\n# pass 2\\n# skipped 1\\n'", 0, 1, "1 node:test subtest(s) skipped"},
      {"printf '# tests 3\\n# pass 3\\n# skipped 0\\n'", 0, 0, ""},
      {"printf '[  SKIPPED ] Guest.Netem (0 ms)\\r\\n'", 0, 1, "gtest reported 1 skipped"},
      {"printf '[  SKIPPED ] 1 test, listed below:\\n'; exit 4", 4, 4, ""},
  };
  for (const Case& c : cases) {
    const std::string quoted = "sh -c \"" + c.command + "\"";
    ShellRun outside = shell("env -u CI " + guard + " " + quoted);
    EXPECT_EQ(outside.exit_code, c.want_outside_ci) << c.command << "\n" << outside.out;
    EXPECT_FALSE(contains(outside.out, "FAIL (CI=true")) << outside.out;
    ShellRun ci = shell("env CI=true " + guard + " " + quoted);
    EXPECT_EQ(ci.exit_code, c.want_in_ci) << c.command << "\n" << ci.out;
    if (c.why_in_ci.empty()) {
      EXPECT_FALSE(contains(ci.out, "FAIL (CI=true")) << ci.out;
    } else {
      EXPECT_TRUE(contains(ci.out, "FAIL (CI=true, so nothing may be skipped): " + c.why_in_ci))
          << c.command << "\n"
          << ci.out;
    }
  }
}

}  // namespace
}  // namespace fabric_chaos::testing
