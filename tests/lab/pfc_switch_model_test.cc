#include "lab/pfc_switch_model.h"

#include <gtest/gtest.h>

namespace fabric_chaos::lab {
namespace {

using injectors::pfcPause;
using injectors::pfcXon;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kGrace = 20 * kMs;

// Two ports at 100 Mbit/s with 3000-byte buffers; p1 honours priority 3 only.
PfcSwitchModel twoPorts() {
  return PfcSwitchModel({{"p0", 10, 100'000'000, 3000, 0xff}, {"p1", 11, 100'000'000, 3000, 0x08}},
                        kGrace);
}

std::vector<uint8_t> frame(size_t bytes, uint8_t tag) { return std::vector<uint8_t>(bytes, tag); }

TEST(PfcSwitchModel, PauseTimeIsQuantaTimes512BitTimesAtThePortRate) {
  EXPECT_EQ(PfcSwitchModel::pauseNanoseconds(65535, 10'000'000'000), 3'355'392);
  EXPECT_EQ(PfcSwitchModel::pauseNanoseconds(65535, 100'000'000), 335'539'200);
  EXPECT_EQ(PfcSwitchModel::pauseNanoseconds(1, 100'000'000), 5'120);
  EXPECT_EQ(PfcSwitchModel::pauseNanoseconds(100, 0), 0);
}

TEST(PfcSwitchModel, AFrameHoldsItsPrioritiesUntilThePauseEndsPlusTheGrace) {
  PfcSwitchModel model = twoPorts();
  const auto changes = model.onPauseFrame(0, pfcPause(0x28, 1000), 5 * kMs);  // priorities 3, 5
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].priority, 3);
  EXPECT_EQ(changes[1].priority, 5);
  EXPECT_EQ(changes[0].until_ns, 5 * kMs + 5'120'000 + kGrace);
  EXPECT_TRUE(model.paused(0, 3));
  EXPECT_FALSE(model.paused(0, 0));
  EXPECT_FALSE(model.paused(1, 3));
  EXPECT_EQ(model.nextDeadline(), 5 * kMs + 5'120'000);
}

TEST(PfcSwitchModel, HeldFramesLeaveInOrderWhenThePauseEndsAndTheGateOpens) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 1000), 0);
  model.onHeld(0, 3, frame(100, 1));
  model.onHeld(0, 3, frame(200, 2));
  std::vector<HoldChange> opened;
  EXPECT_TRUE(model.due(5'119'999, opened).empty());
  EXPECT_TRUE(opened.empty());
  const auto releases = model.due(5'120'000, opened);
  ASSERT_EQ(releases.size(), 1u);
  ASSERT_EQ(releases[0].frames.size(), 2u);
  EXPECT_EQ(releases[0].frames[0][0], 1);
  EXPECT_EQ(releases[0].frames[1][0], 2);
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0].until_ns, 0);
  EXPECT_FALSE(model.paused(0, 3));
  const PfcPortCounters counters = model.counters(0, 6 * kMs);
  EXPECT_EQ(counters.rx_pause[3], 1u);
  EXPECT_EQ(counters.rx_pause_duration_us[3], 5120u);
  EXPECT_EQ(counters.held_frames[3], 2u);
  EXPECT_EQ(counters.released_frames[3], 2u);
  EXPECT_EQ(model.nextDeadline(), std::nullopt);
}

TEST(PfcSwitchModel, ARefreshReplacesTheTimeLeftAndXonEndsThePauseAtOnce) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  model.onPauseFrame(0, pfcPause(0x08, 1000), 1 * kMs);  // shorter: replaces, per 802.1Qbb
  EXPECT_EQ(model.nextDeadline(), 1 * kMs + 5'120'000);
  model.onHeld(0, 3, frame(60, 7));
  EXPECT_TRUE(model.onPauseFrame(0, pfcXon(0x08), 2 * kMs).empty());
  EXPECT_EQ(model.nextDeadline(), 2 * kMs);
  std::vector<HoldChange> opened;
  const auto releases = model.due(2 * kMs, opened);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(opened.size(), 1u);
  const PfcPortCounters counters = model.counters(0, 3 * kMs);
  EXPECT_EQ(counters.rx_pause[3], 3u);  // XON counts as a received pause frame
  EXPECT_EQ(counters.rx_pause_duration_us[3], 2000u);
}

TEST(PfcSwitchModel, APortIgnoresPausesOfPrioritiesItHasNoPfcOn) {
  PfcSwitchModel model = twoPorts();
  const auto changes = model.onPauseFrame(1, pfcPause(0x09, 500), 0);  // priorities 0 and 3
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].priority, 3);
  EXPECT_FALSE(model.paused(1, 0));
  const PfcPortCounters counters = model.counters(1, 0);
  EXPECT_EQ(counters.rx_pause_ignored[0], 1u);
  EXPECT_EQ(counters.rx_pause[3], 1u);
}

TEST(PfcSwitchModel, APausedQueueDropsWhatItsBufferCannotHold) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  model.onHeld(0, 3, frame(1500, 1));
  model.onHeld(0, 3, frame(1500, 2));
  model.onHeld(0, 3, frame(60, 3));  // 3060 > 3000
  EXPECT_EQ(model.queuedBytes(0, 3), 3000);
  const PfcPortCounters counters = model.counters(0, 0);
  EXPECT_EQ(counters.held_frames[3], 2u);
  EXPECT_EQ(counters.dropped_frames[3], 1u);
}

TEST(PfcSwitchModel, AFrameHeldAfterItsPauseEndedIsReleasedAtOnce) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 10), 0);
  std::vector<HoldChange> opened;
  model.due(1 * kMs, opened);         // the pause ended; the gate is being opened
  model.onHeld(0, 3, frame(100, 9));  // it held one more meanwhile
  EXPECT_EQ(model.nextDeadline(), 0);
  opened.clear();
  const auto releases = model.due(1 * kMs, opened);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].frames.size(), 1u);
  EXPECT_TRUE(opened.empty());
}

TEST(PfcSwitchModel, APauseInProgressCountsUpToNow) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  EXPECT_EQ(model.counters(0, 100 * kMs).rx_pause_duration_us[3], 100'000u);
  EXPECT_EQ(model.counters(0, 900 * kMs).rx_pause_duration_us[3], 335'539u);
  EXPECT_EQ(model.portOf(11), 1u);
  EXPECT_EQ(model.portOf(12), std::nullopt);
}

}  // namespace
}  // namespace fabric_chaos::lab
