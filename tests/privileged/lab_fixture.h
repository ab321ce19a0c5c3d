#pragma once
// The fixture of the privileged tests that build their own namespace lab with `fabric-chaos lab`
// (FC_BINARY) under a temporary state directory. SetUp checks root, FC_BINARY and that no fcl-*
// lab exists (and iperf3, when the test measures with it: a failure in CI, a skip elsewhere);
// TearDown stops serve when one was started, the test's iperf3 servers (those logging under the
// test's directory), takes the lab down and checks that no fcl-* namespace is left.
// A derived SetUp calls LabFixture::SetUp(), returns when it failed or skipped
// (setUpFailed()), then brings the lab up with labUp().

#include <memory>
#include <string>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {

// A failure under CI=true (the suite must not pass without iperf3), a skip reason otherwise; ""
// when iperf3 is there. Use through FC_REQUIRE_IPERF3().
std::string missingIperf3();

#define FC_REQUIRE_IPERF3()                                              \
  do {                                                                   \
    std::string missing = ::fabric_chaos::testing::missingIperf3();      \
    if (!missing.empty()) {                                              \
      const char* ci = std::getenv("CI");                                \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << missing; \
      GTEST_SKIP() << missing;                                           \
    }                                                                    \
  } while (0)

class LabFixture : public ::testing::Test {
 protected:
  explicit LabFixture(bool needs_iperf3 = false) : needs_iperf3_(needs_iperf3) {}
  void SetUp() override;
  void TearDown() override;
  // True when SetUp failed or skipped: the derived SetUp returns at once.
  bool setUpFailed() const { return HasFailure() || IsSkipped(); }

  // `fabric-chaos lab ARGS --state-dir <dir>/state`, stderr folded into out.
  CommandOutput lab(const std::string& args);
  // lab("up ARGS"), failing the test with its output when it does not exit 0; a lab this test
  // brought up before is taken down first.
  void labUp(const std::string& args);
  // serve on this test's directory; port_ once it listens (a failure otherwise).
  void startServe();
  // `iperf3 -s -D -1 -p PORT` in namespace netns, logging under the test's directory (so that
  // TearDown stops it), once it listens; a failure otherwise.
  void startIperf3Server(const std::string& netns, int port);

  std::string dir_;
  std::string binary_;
  bool lab_up_ = false;
  std::unique_ptr<ServeProcess> serve_;
  int port_ = 0;

 private:
  bool needs_iperf3_;
};

}  // namespace fabric_chaos::testing
