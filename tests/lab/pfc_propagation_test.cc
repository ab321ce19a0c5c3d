// Pause propagation (lab/pfc_propagation.h): which ports a lossless switch pauses when a paused
// queue fills, how it refreshes and ends those pauses, on scripted queue loads.

#include "lab/pfc_propagation.h"

#include <gtest/gtest.h>

namespace fabric_chaos::lab {
namespace {

constexpr int64_t kMs = 1'000'000;
// 65535 quanta at 100 Mbit/s last 335.5392 ms: refreshed every 167.7696 ms.
constexpr int64_t kRefreshAt100Mbit = 167'769'600;

// Three ports at 100 Mbit/s, XOFF at 4000 bytes, XON at 1000.
PfcPausePropagation threePorts(int64_t xoff = 4000) {
  return PfcPausePropagation({100'000'000, 100'000'000, 100'000'000}, {xoff, 1000});
}
const std::vector<uint8_t> kAllEnabled = {0xff, 0xff, 0xff};

PfcQueueLoad load(size_t port, int priority, int64_t bytes, std::vector<size_t> fed_by) {
  return {port, priority, bytes, std::move(fed_by)};
}

bool sameFrame(const PfcPauseOut& a, const PfcPauseOut& b) {
  return a.port == b.port && a.priority == b.priority && a.quanta == b.quanta;
}

TEST(PfcPausePropagation, AQueuePastXoffPausesThePortsFeedingItOnItsPriority) {
  PfcPausePropagation propagation = threePorts();
  // Below XOFF: nothing.
  EXPECT_TRUE(propagation.update({load(2, 3, 3999, {0, 1})}, kAllEnabled, 0).empty());
  const auto out = propagation.update({load(2, 3, 4000, {0, 1})}, kAllEnabled, 1 * kMs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(sameFrame(out[0], {0, 3, kPropagatedPauseQuanta}));
  EXPECT_TRUE(sameFrame(out[1], {1, 3, kPropagatedPauseQuanta}));
  EXPECT_TRUE(propagation.pausing(0, 3));
  EXPECT_FALSE(propagation.pausing(2, 3)) << "the paused port itself fed nothing";
  EXPECT_FALSE(propagation.pausing(0, 0)) << "only the queue's priority";
  EXPECT_EQ(propagation.txPause(0, 3), 1u);
  EXPECT_EQ(propagation.nextDeadline(), 1 * kMs + kRefreshAt100Mbit);
}

TEST(PfcPausePropagation, APauseIsRefreshedEveryHalfPauseTimeWhileTheQueueStaysFull) {
  PfcPausePropagation propagation = threePorts();
  const std::vector<PfcQueueLoad> full = {load(2, 3, 5000, {0})};
  ASSERT_EQ(propagation.update(full, kAllEnabled, 0).size(), 1u);
  EXPECT_TRUE(propagation.update(full, kAllEnabled, kRefreshAt100Mbit - 1).empty());
  const auto refresh = propagation.update(full, kAllEnabled, kRefreshAt100Mbit);
  ASSERT_EQ(refresh.size(), 1u);
  EXPECT_TRUE(sameFrame(refresh[0], {0, 3, kPropagatedPauseQuanta}));
  EXPECT_EQ(propagation.txPause(0, 3), 2u);
  EXPECT_EQ(propagation.nextDeadline(), 2 * kRefreshAt100Mbit);
}

TEST(PfcPausePropagation, BetweenXonAndXoffThePauseStaysAndBelowXonAnXonEndsIt) {
  PfcPausePropagation propagation = threePorts();
  ASSERT_EQ(propagation.update({load(2, 3, 4000, {0})}, kAllEnabled, 0).size(), 1u);
  // Hysteresis: 1001..3999 bytes keeps the pause, with no new frame before the refresh.
  EXPECT_TRUE(propagation.update({load(2, 3, 1001, {0})}, kAllEnabled, 1 * kMs).empty());
  EXPECT_TRUE(propagation.pausing(0, 3));
  // Released (the queue emptied): XON at once.
  const auto xon = propagation.update({}, kAllEnabled, 2 * kMs);
  ASSERT_EQ(xon.size(), 1u);
  EXPECT_TRUE(sameFrame(xon[0], {0, 3, 0}));
  EXPECT_FALSE(propagation.pausing(0, 3));
  EXPECT_EQ(propagation.txPause(0, 3), 2u) << "the XON counts as a pause frame sent";
  EXPECT_EQ(propagation.nextDeadline(), std::nullopt);
  EXPECT_TRUE(propagation.update({}, kAllEnabled, 3 * kMs).empty());
  // A queue between the thresholds does not start a pause.
  EXPECT_TRUE(propagation.update({load(2, 3, 3000, {0})}, kAllEnabled, 4 * kMs).empty());
}

TEST(PfcPausePropagation, APortThatStopsFeedingAFullQueueIsResumed) {
  PfcPausePropagation propagation = threePorts();
  ASSERT_EQ(propagation.update({load(2, 3, 6000, {0, 1})}, kAllEnabled, 0).size(), 2u);
  // The queue emptied and filled again from port 1 only (port 0's frames left with the release).
  const auto out = propagation.update({load(2, 3, 6000, {1})}, kAllEnabled, 1 * kMs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(sameFrame(out[0], {0, 3, 0}));
  EXPECT_TRUE(propagation.pausing(1, 3));
}

TEST(PfcPausePropagation, OnlyPrioritiesThePortHasPfcOnArePaused) {
  PfcPausePropagation propagation = threePorts();
  // Port 0 honours (and so generates) PFC on priority 4 only.
  EXPECT_TRUE(propagation.update({load(2, 3, 9000, {0})}, {0x10, 0xff, 0xff}, 0).empty());
  ASSERT_EQ(propagation.update({load(2, 3, 9000, {0})}, kAllEnabled, 1 * kMs).size(), 1u);
  // PFC taken off that priority while pausing: XON, no refresh.
  const auto out = propagation.update({load(2, 3, 9000, {0})}, {0x10, 0xff, 0xff}, 2 * kMs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(sameFrame(out[0], {0, 3, 0}));
}

TEST(PfcPausePropagation, ZeroXoffNeverPropagates) {
  PfcPausePropagation propagation = threePorts(0);
  EXPECT_TRUE(propagation.update({load(2, 3, 1 << 20, {0, 1})}, kAllEnabled, 0).empty());
  EXPECT_EQ(propagation.nextDeadline(), std::nullopt);
}

TEST(PfcPausePropagation, ReleaseAllSendsAnXonForEveryPauseInForce) {
  PfcPausePropagation propagation = threePorts();
  ASSERT_EQ(
      propagation.update({load(2, 3, 9000, {0}), load(1, 5, 9000, {2})}, kAllEnabled, 0).size(),
      2u);
  const auto out = propagation.releaseAll();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(sameFrame(out[0], {0, 3, 0}));
  EXPECT_TRUE(sameFrame(out[1], {2, 5, 0}));
  EXPECT_FALSE(propagation.pausing(0, 3));
  EXPECT_TRUE(propagation.releaseAll().empty());
}

TEST(PfcPausePropagation, LoadsNamingUnknownPortsOrPrioritiesAreIgnored) {
  PfcPausePropagation propagation = threePorts();
  EXPECT_TRUE(propagation
                  .update({load(2, 3, 9000, {9}), load(2, 8, 9000, {0}), load(2, -1, 9000, {0})},
                          kAllEnabled, 0)
                  .empty());
  EXPECT_EQ(propagation.txPause(9, 3), 0u);
  EXPECT_FALSE(propagation.pausing(0, 9));
}

}  // namespace
}  // namespace fabric_chaos::lab
