// The verbs shims' lease keeper (injectors/verbs/shim_lease_keeper.h) against a fake channel:
// each round renews every held program once, drops the ones that exited or whose lease already
// ran out, retries the ones that were only slow, never drops a program held anew meanwhile, and
// its thread renews on its own and stops at once.

#include "injectors/verbs/shim_lease_keeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/fakes/fake_verbs_shim_channel.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;
using std::chrono::milliseconds;

// Long enough that the thread never ticks during a test that drives renewAll() by hand.
constexpr milliseconds kNever{3600 * 1000};

class ShimLeaseKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (pid_t pid : {10, 11, 12}) {
      channel_.addProcess({pid, "python", pid - 10, {"rxe0"}});
      ASSERT_TRUE(channel_.arm(pid, verbs_shim::ArmRequest{}).isOk());
    }
  }
  static bool eventually(const std::function<bool()>& condition) {
    for (int i = 0; i < 500 && !condition(); ++i) std::this_thread::sleep_for(milliseconds(10));
    return condition();
  }

  fakes::FakeVerbsShimChannel channel_;
};

TEST_F(ShimLeaseKeeperTest, EachRoundRenewsEveryHeldProgramOnce) {
  ShimLeaseKeeper keeper(channel_, kNever);
  keeper.hold("a", {10, 11});
  keeper.hold("b", {11});  // held twice (a stale stack): renewed once
  keeper.renewAll();
  EXPECT_EQ(channel_.count("renew 10"), 1);
  EXPECT_EQ(channel_.count("renew 11"), 1);
  EXPECT_EQ(channel_.count("renew 12"), 0) << "not held";
  EXPECT_EQ(keeper.held("a"), (std::vector<pid_t>{10, 11}));
  keeper.renewAll();
  EXPECT_EQ(channel_.count("renew 10"), 2);
}

TEST_F(ShimLeaseKeeperTest, DropsProgramsThatExitedOrWhoseLeaseRanOut) {
  ShimLeaseKeeper keeper(channel_, kNever);
  keeper.hold("a", {10, 11, 12});
  channel_.exit(10);
  channel_.lapse(11);  // its shim disarmed itself: renewing can never succeed again
  keeper.renewAll();
  EXPECT_EQ(keeper.held("a"), (std::vector<pid_t>{12}));
  keeper.renewAll();
  EXPECT_EQ(channel_.count("renew 10"), 1);
  EXPECT_EQ(channel_.count("renew 11"), 1);
  EXPECT_EQ(channel_.count("renew 12"), 2);
  EXPECT_EQ(keeper.holderOf(10), std::nullopt);
  EXPECT_EQ(keeper.holderOf(12), "a");
}

TEST_F(ShimLeaseKeeperTest, ASlowProgramIsTriedAgainNextRound) {
  ShimLeaseKeeper keeper(channel_, kNever);
  keeper.hold("a", {10});
  channel_.failOn(static_cast<int>(channel_.requests().size()) + 1,
                  Status(StatusCode::kTimeout, "did not answer within 1000 ms"));
  keeper.renewAll();
  EXPECT_EQ(keeper.held("a"), (std::vector<pid_t>{10}));
  channel_.failOn(static_cast<int>(channel_.requests().size()) + 1,
                  Status(StatusCode::kUnavailable, "recv: EIO"));
  keeper.renewAll();
  EXPECT_EQ(keeper.held("a"), (std::vector<pid_t>{10}));
  keeper.renewAll();
  EXPECT_EQ(channel_.count("renew 10"), 3);
}

TEST_F(ShimLeaseKeeperTest, HoldReplacesAndReleaseStops) {
  ShimLeaseKeeper keeper(channel_, kNever);
  keeper.hold("a", {10});
  keeper.hold("a", {11, 12});
  EXPECT_EQ(keeper.held("a"), (std::vector<pid_t>{11, 12}));
  EXPECT_EQ(keeper.holderOf(10), std::nullopt);
  EXPECT_EQ(keeper.release("a"), (std::vector<pid_t>{11, 12}));
  EXPECT_TRUE(keeper.release("a").empty()) << "released twice";
  EXPECT_TRUE(keeper.held("a").empty());
  keeper.renewAll();
  EXPECT_EQ(channel_.requests().size(), 3u) << "only SetUp's arms";
}

// A round that saw a renewal fail must not drop a program that an apply armed and held again
// while the round ran: its new lease is fine.
class RearmingChannel : public fakes::FakeVerbsShimChannel {
 public:
  Status renew(pid_t pid) override {
    if (keeper != nullptr && !rearmed) {
      rearmed = true;
      keeper->hold("a", {pid});
    }
    (void)FakeVerbsShimChannel::renew(pid);
    return Status(StatusCode::kFailedPrecondition, "nothing is armed: the lease ran out");
  }
  ShimLeaseKeeper* keeper = nullptr;
  bool rearmed = false;
};

TEST(ShimLeaseKeeperRace, AProgramHeldAnewDuringARoundIsKept) {
  RearmingChannel channel;
  channel.addProcess({10, "python", 0, {}});
  ShimLeaseKeeper keeper(channel, kNever);
  channel.keeper = &keeper;
  keeper.hold("a", {10});
  keeper.renewAll();
  EXPECT_EQ(keeper.held("a"), (std::vector<pid_t>{10}));
  keeper.renewAll();  // nothing held anew this time: the lapsed program goes
  EXPECT_TRUE(keeper.held("a").empty());
}

TEST_F(ShimLeaseKeeperTest, ItsThreadRenewsOnItsOwnAndStopsAtOnce) {
  {
    ShimLeaseKeeper keeper(channel_, milliseconds(10));
    keeper.hold("a", {10});
    EXPECT_TRUE(eventually([&] { return channel_.count("renew 10") >= 3; }))
        << channel_.count("renew 10") << " renewals";
  }
  const int renewals = channel_.count("renew 10");
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(channel_.count("renew 10"), renewals) << "renewing after its destruction";

  // A keeper that would tick only in an hour still stops at once.
  const auto start = std::chrono::steady_clock::now();
  { ShimLeaseKeeper idle(channel_, kNever); }
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
}

}  // namespace
}  // namespace fabric_chaos::injectors
