#include "lab/pfc_switch_model.h"

#include <gtest/gtest.h>

namespace fabric_chaos::lab {
namespace {

using injectors::formatPfcWatchdog;
using injectors::parsePfcWatchdog;
using injectors::pfcPause;
using injectors::pfcXon;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kGrace = 20 * kMs;

// Two ports at 100 Mbit/s with 3000-byte buffers; p1 honours priority 3 only.
PfcSwitchModel twoPorts() {
  return PfcSwitchModel({{"p0", 10, 100'000'000, 3000, 0xff, std::nullopt},
                         {"p1", 11, 100'000'000, 3000, 0x08, std::nullopt}},
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

// The watchdog, as SONiC's pfcwd: 200 ms detection, 200 ms restoration by default.
PfcSwitchModel watched(PfcWatchdogAction action) {
  return PfcSwitchModel(
      {{"p0", 10, 100'000'000, 100'000, 0xff, PfcWatchdogConfig{action, 200, 300}}}, kGrace);
}

// A storm: a frame of 65535 quanta (335.5 ms) every 100 ms from `from` for `length`.
void storm(PfcSwitchModel& model, int64_t from, int64_t length, std::vector<HoldChange>* out) {
  for (int64_t t = from; t < from + length; t += 100 * kMs) {
    auto changes = model.onPauseFrame(0, pfcPause(0x08, 65535), t);
    if (out) out->insert(out->end(), changes.begin(), changes.end());
  }
}

TEST(PfcWatchdog, DropDetectsAfterTheDetectionTimeAndDiscardsTheQueueAndWhatFollows) {
  PfcSwitchModel model = watched(PfcWatchdogAction::kDrop);
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  model.onHeld(0, 3, frame(100, 1));
  EXPECT_EQ(model.nextDeadline(), 200 * kMs);  // detection comes before the pause's end
  std::vector<HoldChange> changes;
  EXPECT_TRUE(model.due(199 * kMs, changes).empty());
  EXPECT_FALSE(model.inStorm(0, 3));
  storm(model, 100 * kMs, 100 * kMs, nullptr);  // one more frame at 100 ms
  EXPECT_TRUE(model.due(200 * kMs, changes).empty()) << "dropped frames are not released";
  EXPECT_TRUE(model.inStorm(0, 3));
  EXPECT_FALSE(model.paused(0, 3));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].until_ns, 100 * kMs + 300 * kMs + kGrace) << "the gate keeps discarding";
  // During the storm: frames are ignored for pausing, the gate keeps holding, held ones go.
  std::vector<HoldChange> during;
  storm(model, 300 * kMs, 500 * kMs, &during);  // frames at 300..700 ms
  ASSERT_FALSE(during.empty());
  EXPECT_EQ(during.back().until_ns, 700 * kMs + 300 * kMs + kGrace);
  model.onHeld(0, 3, frame(100, 2));
  EXPECT_FALSE(model.paused(0, 3));
  EXPECT_EQ(model.nextDeadline(), 1000 * kMs);  // restoration: 300 ms after the last frame
  changes.clear();
  EXPECT_TRUE(model.due(999 * kMs, changes).empty());
  EXPECT_TRUE(model.inStorm(0, 3));
  model.due(1000 * kMs, changes);
  EXPECT_FALSE(model.inStorm(0, 3));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].until_ns, 0) << "restored: the gate opens";
  const PfcPortCounters c = model.counters(0, 1000 * kMs);
  EXPECT_EQ(c.storms_detected[3], 1u);
  EXPECT_EQ(c.storms_restored[3], 1u);
  EXPECT_EQ(c.watchdog_dropped_frames[3], 2u);
  EXPECT_EQ(c.last_detected_ns[3], 200 * kMs);
  EXPECT_EQ(c.last_restored_ns[3], 1000 * kMs);
  EXPECT_EQ(c.rx_pause[3], 7u);  // every frame is counted, ignored or not
  EXPECT_EQ(c.rx_pause_duration_us[3], 200'000u);
  // Honoured again afterwards.
  model.onPauseFrame(0, pfcPause(0x08, 1000), 1100 * kMs);
  EXPECT_TRUE(model.paused(0, 3));
}

TEST(PfcWatchdog, ForwardReleasesTheQueueAtDetectionAndIgnoresTheStorm) {
  PfcSwitchModel model = watched(PfcWatchdogAction::kForward);
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  model.onHeld(0, 3, frame(100, 1));
  storm(model, 100 * kMs, 100 * kMs, nullptr);
  std::vector<HoldChange> changes;
  const auto releases = model.due(200 * kMs, changes);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].frames.size(), 1u);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].until_ns, 0);
  EXPECT_TRUE(model.inStorm(0, 3));
  std::vector<HoldChange> during;
  storm(model, 300 * kMs, 300 * kMs, &during);
  EXPECT_TRUE(during.empty()) << "pause frames are ignored";
  EXPECT_FALSE(model.paused(0, 3));
  model.due(800 * kMs, changes);
  EXPECT_FALSE(model.inStorm(0, 3));
  EXPECT_EQ(model.counters(0, 800 * kMs).watchdog_dropped_frames[3], 0u);
}

TEST(PfcWatchdog, AlertOnlyCountsAndShortPausesNeverTripIt) {
  PfcSwitchModel model = watched(PfcWatchdogAction::kAlert);
  model.onPauseFrame(0, pfcPause(0x08, 10000), 0);  // 51 ms: ends before the detection time
  std::vector<HoldChange> changes;
  model.due(60 * kMs, changes);
  EXPECT_FALSE(model.paused(0, 3));
  model.due(300 * kMs, changes);
  EXPECT_FALSE(model.inStorm(0, 3));
  storm(model, 400 * kMs, 300 * kMs, nullptr);
  model.due(600 * kMs, changes);
  EXPECT_TRUE(model.inStorm(0, 3));
  EXPECT_TRUE(model.paused(0, 3)) << "alert leaves the pause alone";
  EXPECT_EQ(model.counters(0, 600 * kMs).storms_detected[3], 1u);
}

TEST(PfcWatchdog, StartedDuringAPauseWatchesItFromThenAndOnlyOnThatPort) {
  PfcSwitchModel model = twoPorts();
  storm(model, 0, 300 * kMs, nullptr);  // port 0, frames at 0, 100, 200 ms
  std::vector<HoldChange> changes;
  model.setWatchdog(0, PfcWatchdogConfig{PfcWatchdogAction::kDrop, 200, 300}, 250 * kMs, changes);
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(model.nextDeadline(), 450 * kMs) << "detection counts from the watchdog's start";
  model.onHeld(0, 3, frame(100, 1));
  model.due(449 * kMs, changes);
  EXPECT_FALSE(model.inStorm(0, 3));
  model.due(450 * kMs, changes);
  EXPECT_TRUE(model.inStorm(0, 3));
  EXPECT_EQ(model.counters(0, 450 * kMs).watchdog_dropped_frames[3], 1u);
  // Port 1 has no watchdog: its pause lasts.
  model.onPauseFrame(1, pfcPause(0x08, 65535), 450 * kMs);
  model.due(700 * kMs, changes);
  EXPECT_FALSE(model.inStorm(1, 3));
  EXPECT_TRUE(model.paused(1, 3));
}

TEST(PfcWatchdog, StoppingItEndsTheStormAndTheDropGateOpens) {
  PfcSwitchModel model = watched(PfcWatchdogAction::kDrop);
  storm(model, 0, 300 * kMs, nullptr);
  std::vector<HoldChange> changes;
  model.due(200 * kMs, changes);
  ASSERT_TRUE(model.inStorm(0, 3));
  changes.clear();
  model.setWatchdog(0, std::nullopt, 250 * kMs, changes);
  EXPECT_FALSE(model.inStorm(0, 3));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].until_ns, 0);
  EXPECT_EQ(model.counters(0, 250 * kMs).storms_restored[3], 1u);
  // Without a watchdog the next frame pauses again, and no storm is declared.
  model.onPauseFrame(0, pfcPause(0x08, 65535), 300 * kMs);
  EXPECT_TRUE(model.paused(0, 3));
  model.due(600 * kMs, changes);
  EXPECT_FALSE(model.inStorm(0, 3));
}

TEST(PfcSwitchModel, TurningPfcOffEndsThePauseAndLaterFramesAreIgnored) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  model.onHeld(0, 3, frame(100, 1));
  model.setPfcEnabled(0, 0xf7, 10 * kMs);  // priority 3 off
  std::vector<HoldChange> changes;
  const auto releases = model.due(10 * kMs, changes);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_FALSE(model.paused(0, 3));
  EXPECT_TRUE(model.onPauseFrame(0, pfcPause(0x08, 65535), 20 * kMs).empty());
  EXPECT_EQ(model.counters(0, 20 * kMs).rx_pause_ignored[3], 1u);
  EXPECT_EQ(model.ports()[0].pfc_enabled, 0xf7);
  model.setPfcEnabled(0, 0xff, 30 * kMs);
  EXPECT_FALSE(model.onPauseFrame(0, pfcPause(0x08, 65535), 40 * kMs).empty());
}

TEST(PfcWatchdog, ReleaseAllEmptiesEveryQueue) {
  PfcSwitchModel model = twoPorts();
  model.onPauseFrame(0, pfcPause(0x08, 65535), 0);
  model.onHeld(0, 3, frame(100, 1));
  model.onHeld(0, 3, frame(100, 2));
  const auto releases = model.releaseAll();
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].frames.size(), 2u);
  EXPECT_EQ(model.queuedBytes(0, 3), 0);
}

TEST(PfcWatchdog, ParsesSonicsActionsAndRanges) {
  auto defaults = parsePfcWatchdog("drop");
  ASSERT_TRUE(defaults.isOk());
  EXPECT_EQ(*defaults, (PfcWatchdogConfig{PfcWatchdogAction::kDrop, 200, 200}));
  auto tuned = parsePfcWatchdog("forward:400:2000");
  ASSERT_TRUE(tuned.isOk());
  EXPECT_EQ(*tuned, (PfcWatchdogConfig{PfcWatchdogAction::kForward, 400, 2000}));
  EXPECT_EQ(formatPfcWatchdog(*tuned), "forward:400:2000");
  EXPECT_EQ(parsePfcWatchdog("alert:100").value().detection_ms, 100);
  EXPECT_EQ(parsePfcWatchdog("shed").status().message(),
            "--pfc-watchdog: the action must be drop, forward or alert, got \"shed\"");
  EXPECT_EQ(parsePfcWatchdog("drop:50").status().message(),
            "--pfc-watchdog: the detection time must be 100 to 5000 ms, got \"50\"");
  EXPECT_EQ(parsePfcWatchdog("drop:200:60001").status().message(),
            "--pfc-watchdog: the restoration time must be 100 to 60000 ms, got \"60001\"");
  EXPECT_FALSE(parsePfcWatchdog("drop:1:2:3").isOk());
}

TEST(PfcSwitchModel, AQueueKnowsThePortsItsFramesCameInOnUntilItEmpties) {
  PfcSwitchModel model = twoPorts();
  EXPECT_TRUE(model.queueLoads().empty());
  model.onPauseFrame(0, pfcPause(0x08, 1000), 0);
  model.onHeld(0, 3, frame(100, 1), 1);
  model.onHeld(0, 3, frame(200, 2), 1);
  model.onHeld(0, 3, frame(300, 3));    // the switch's own: no ingress port
  model.onHeld(0, 3, frame(50, 4), 7);  // not a port of this switch: ignored as a feeder
  auto loads = model.queueLoads();
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].port, 0u);
  EXPECT_EQ(loads[0].priority, 3);
  EXPECT_EQ(loads[0].bytes, 650);
  EXPECT_EQ(loads[0].fed_by, std::vector<size_t>{1});
  // A frame that does not fit the 3000-byte buffer is dropped, and does not make its port a
  // feeder.
  model.onHeld(0, 3, frame(2500, 5), 0);
  EXPECT_EQ(model.queueLoads()[0].fed_by, std::vector<size_t>{1});
  // Released: nothing queued, nothing fed.
  std::vector<HoldChange> opened;
  EXPECT_EQ(model.due(5'120'000, opened).size(), 1u);
  EXPECT_TRUE(model.queueLoads().empty());
  model.onPauseFrame(0, pfcPause(0x08, 1000), 6 * kMs);
  model.onHeld(0, 3, frame(100, 6), 0);
  loads = model.queueLoads();
  ASSERT_EQ(loads.size(), 1u);
  EXPECT_EQ(loads[0].fed_by, std::vector<size_t>{0}) << "the earlier feeder was forgotten";
}

}  // namespace
}  // namespace fabric_chaos::lab
