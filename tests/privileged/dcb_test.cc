// The DCB adapter (injectors/sys/dcb.h) against the real kernel in a throw-away namespace: a veth
// has no DCB ops, so both the IEEE GET and SET come back kNotSupported naming EOPNOTSUPP (as
// iproute2's `dcb pfc show` says "Operation not supported"), a missing interface or namespace is
// kNotFound, and `ip -d link show` of the veth pair is the same before and after. The in-memory
// fake (tests/fakes/fake_dcb.h) is held to the same codes and errnos. Needs root.

#include "injectors/sys/dcb.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "tests/fakes/fake_dcb.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using core::StatusCode;

int g_namespace_counter = 0;  // constant-initialized; the tests of one executable run in turn

sys::IeeePfc pfcOnPriority3() {
  sys::IeeePfc pfc;
  pfc.pfc_cap = 8;
  pfc.pfc_en = 1u << 3;
  return pfc;
}

class DcbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    ns_ = "fcdcb-" + std::to_string(::getpid()) + "-" + std::to_string(g_namespace_counter++);
    auto made = runShell("set -e; ip netns add " + ns_ + "; ip -n " + ns_ +
                         " link add dcb0 type veth peer name dcb1; ip -n " + ns_ +
                         " link set dcb0 up 2>&1");
    created_ = true;
    ASSERT_EQ(made.exit_code, 0) << made.out;
    before_ = links();
    ASSERT_NE(before_.find("dcb0"), std::string::npos) << before_;
  }

  void TearDown() override {
    if (created_) runShell("ip netns del " + ns_ + " 2>/dev/null");
  }

  // Both ends of the pair in detail (`ip -d`), as iproute2 sees them.
  std::string links() {
    return runShell("ip -n " + ns_ + " -d link show dcb0 2>&1; ip -n " + ns_ +
                    " -d link show dcb1 2>&1")
        .out;
  }

  std::string ns_;
  std::string before_;
  bool created_ = false;
};

TEST_F(DcbTest, VethHasNoDcbSupport) {
  auto dcb = sys::makeKernelDcb();

  auto got = dcb->getIeeePfc(ns_, "dcb0");
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), StatusCode::kNotSupported) << got.status().toString();
  EXPECT_EQ(got.status().origin(), EOPNOTSUPP);
  EXPECT_NE(got.status().message().find("dcb0"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find("EOPNOTSUPP from RTM_GETDCB"), std::string::npos)
      << got.status().message();

  core::Status set = dcb->setIeeePfc(ns_, "dcb0", pfcOnPriority3());
  EXPECT_EQ(set.code(), StatusCode::kNotSupported) << set.toString();
  EXPECT_EQ(set.origin(), EOPNOTSUPP);
  EXPECT_NE(set.message().find("dcb0"), std::string::npos) << set.message();
  EXPECT_NE(set.message().find("EOPNOTSUPP from RTM_SETDCB"), std::string::npos) << set.message();

  // The other end and the namespace's loopback answer the same (no DCB ops either).
  for (const char* ifname : {"dcb1", "lo"}) {
    SCOPED_TRACE(ifname);
    EXPECT_EQ(dcb->getIeeePfc(ns_, ifname).status().code(), StatusCode::kNotSupported);
  }

  EXPECT_EQ(links(), before_);
}

TEST_F(DcbTest, Iproute2AgreesThatTheVethHasNoDcb) {
  if (runShell("command -v dcb >/dev/null").exit_code != 0) {
    GTEST_SKIP() << "iproute2's dcb tool is not installed";
  }
  auto shown = runShell("dcb -n " + ns_ + " pfc show dev dcb0 2>&1");
  EXPECT_NE(shown.exit_code, 0);
  EXPECT_NE(shown.out.find("Operation not supported"), std::string::npos) << shown.out;
}

TEST_F(DcbTest, MissingInterfaceOrNamespaceIsNotFound) {
  auto dcb = sys::makeKernelDcb();

  auto got = dcb->getIeeePfc(ns_, "nosuch0");
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << got.status().toString();
  EXPECT_EQ(got.status().origin(), ENODEV);
  EXPECT_NE(got.status().message().find("nosuch0"), std::string::npos) << got.status().message();
  EXPECT_NE(got.status().message().find(ns_), std::string::npos) << got.status().message();

  core::Status set = dcb->setIeeePfc(ns_, "nosuch0", pfcOnPriority3());
  EXPECT_EQ(set.code(), StatusCode::kNotFound) << set.toString();
  EXPECT_NE(set.message().find("nosuch0"), std::string::npos) << set.message();

  // The caller's namespace (""): a name no test creates.
  EXPECT_EQ(dcb->getIeeePfc("", "fcdcb-none").status().code(), StatusCode::kNotFound);

  auto no_netns = dcb->getIeeePfc(ns_ + "-gone", "dcb0");
  ASSERT_FALSE(no_netns.isOk());
  EXPECT_EQ(no_netns.status().code(), StatusCode::kNotFound) << no_netns.status().toString();

  EXPECT_EQ(dcb->getIeeePfc(ns_, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(dcb->setIeeePfc(ns_, "sixteen-chars-xx", {}).code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(links(), before_);
}

TEST_F(DcbTest, FakeAnswersWithTheKernelsCodesAndErrnos) {
  auto real = sys::makeKernelDcb();
  fakes::FakeDcb fake;
  fake.addUnsupportedDevice(ns_, "dcb0");

  const auto expectSame = [](const core::Status& want, const core::Status& have) {
    EXPECT_EQ(have.code(), want.code()) << want.toString() << " vs " << have.toString();
    EXPECT_EQ(have.origin(), want.origin()) << want.toString() << " vs " << have.toString();
    EXPECT_EQ(have.message(), want.message());
  };
  expectSame(real->getIeeePfc(ns_, "dcb0").status(), fake.getIeeePfc(ns_, "dcb0").status());
  expectSame(real->setIeeePfc(ns_, "dcb0", pfcOnPriority3()),
             fake.setIeeePfc(ns_, "dcb0", pfcOnPriority3()));
  expectSame(real->getIeeePfc(ns_, "nosuch0").status(), fake.getIeeePfc(ns_, "nosuch0").status());
  expectSame(real->setIeeePfc(ns_, "nosuch0", {}), fake.setIeeePfc(ns_, "nosuch0", {}));

  ASSERT_EQ(fake.setCalls().size(), 2u);
  EXPECT_EQ(fake.setCalls()[0].pfc, pfcOnPriority3());
  fake.addDevice(ns_, "nic0");
  EXPECT_TRUE(fake.setIeeePfc(ns_, "nic0", pfcOnPriority3()).isOk());
  EXPECT_EQ(fake.pfc(ns_, "nic0")->pfc_en, 0x08);
  fake.failOnCall(4, core::Status(StatusCode::kUnavailable, "busy"));
  EXPECT_EQ(fake.setIeeePfc(ns_, "nic0", {}).code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.pfc(ns_, "nic0")->pfc_en, 0x08);
}

}  // namespace
}  // namespace fabric_chaos::testing
