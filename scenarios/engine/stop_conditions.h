#pragma once
// The pieces of a scenario's stop conditions that are pure arithmetic: the low-busbw watch over
// completed iterations and the wording of stop messages. The engine feeds them from the agent's
// reader threads under its own lock; nothing here locks or does I/O.

#include <cstdint>
#include <string>

namespace fabric_chaos::scenarios {

// "busbw below threshold for for_ms", where an interval with no completed iteration counts as
// below: the condition holds once for_ms have passed since the end of the last iteration at or
// above the threshold (or since the watch started, if none has completed since).
class LowBusbwWatch {
 public:
  LowBusbwWatch(double threshold_gbps, double for_ms, double start_ms)
      : threshold_(threshold_gbps), for_ms_(for_ms), last_good_end_ms_(start_ms) {}

  // A completed iteration ending at end_ms (run-relative) with this bus bandwidth.
  void onIteration(double end_ms, double busbw_gbps) {
    if (busbw_gbps >= threshold_ && end_ms > last_good_end_ms_) last_good_end_ms_ = end_ms;
  }
  // Start of the current low stretch.
  double stretchStartMs() const { return last_good_end_ms_; }
  // The instant the condition becomes true unless a good iteration ends before it.
  double conditionMs() const { return last_good_end_ms_ + for_ms_; }
  bool holdsAt(double now_ms) const { return now_ms >= conditionMs(); }
  double thresholdGbps() const { return threshold_; }

 private:
  double threshold_;
  double for_ms_;
  double last_good_end_ms_;
};

// 0.05 -> "5%", 0.125 -> "12.5%".
std::string percentText(double fraction);

// "busbw below 5% of baseline for 2000 ms"
std::string busbwBelowText(double fraction, int64_t for_ms);

}  // namespace fabric_chaos::scenarios
