#pragma once
// The clock arithmetic of `fabric-chaos pfc-emit`: when the next frame is due (absolute deadlines,
// the on/off pattern, bounded catch-up after a late wake-up) and the spacing actually achieved
// (gap percentiles for the JSON stats lines). Pure: times are CLOCK_MONOTONIC nanoseconds passed
// in by the caller. Not thread-safe; the emitter's one thread owns both objects.

#include <cstdint>
#include <string>
#include <vector>

namespace fabric_chaos::injectors {

// A wake-up that finds more frames due than this sends this many and skips the rest: a burst of
// pause frames pauses no longer than one, and a long one would only flood the link.
inline constexpr int kMaxPfcBurstFrames = 8;

// Deadlines start + k * period; with an on/off pattern only those falling in the first on_ns of
// every (on_ns + off_ns) cycle from start (the first frame of each on phase at its very start).
class PfcPacer {
 public:
  // period_ns > 0; on_ns 0 means no pattern (always on).
  PfcPacer(int64_t start_ns, int64_t period_ns, int64_t on_ns = 0, int64_t off_ns = 0);

  struct Due {
    int frames = 0;       // to send now, 0..kMaxPfcBurstFrames
    int64_t skipped = 0;  // due but dropped to bound the burst
  };
  // Called on waking at now_ns: the frames due since the last call and, past the burst bound,
  // skipped. Afterwards nextDeadline() > now_ns.
  Due due(int64_t now_ns);
  // The time to sleep until (absolute).
  int64_t nextDeadline() const { return next_ns_; }

 private:
  int64_t countUpTo(int64_t t) const;   // deadlines <= t
  int64_t firstAfter(int64_t t) const;  // the first deadline > t

  int64_t start_ns_;
  int64_t period_ns_;
  int64_t on_ns_;
  int64_t cycle_ns_;
  int64_t per_cycle_;  // deadlines in one on phase
  int64_t next_ns_;
};

// Gaps in a fixed log-linear histogram, 128 buckets per power of two (a bucket's middle is within
// 0.4 % of any value in it): bounded memory however long the storm runs.
class GapHistogram {
 public:
  GapHistogram();
  void record(int64_t gap_ns);
  int64_t count() const { return count_; }
  // The q-quantile (0 < q <= 1), the middle of its bucket but never above max; 0 when empty.
  int64_t quantileNs(double q) const;
  int64_t maxNs() const { return max_ns_; }

 private:
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  int64_t max_ns_ = 0;
};

// What the emitter has done since start_ns, and its JSON stats line.
class PfcEmitRecorder {
 public:
  PfcEmitRecorder(int64_t start_ns, int64_t period_ns)
      : start_ns_(start_ns), period_ns_(period_ns) {}
  // A frame sent successfully at now_ns; `timed` false for one that is not part of the storm's
  // rhythm (the closing XON): counted, but not a gap.
  void sent(int64_t now_ns, bool timed = true);
  void sendFailed() { ++send_errors_; }
  void skipped(int64_t frames) { skipped_ += frames; }

  int64_t frames() const { return frames_; }
  int64_t sendErrors() const { return send_errors_; }
  const GapHistogram& gaps() const { return gaps_; }

  // {"frames":N,"send_errors":E,"skipped":K,"elapsed_ms":T,
  //  "gap_us":{"p50":..,"p99":..,"max":..},"period_us":P} and, when final, "final":true.
  // Gaps are between consecutive successful sends since the start; 0 until there are two.
  std::string jsonLine(int64_t now_ns, bool final) const;

 private:
  int64_t start_ns_;
  int64_t period_ns_;
  int64_t frames_ = 0;
  int64_t send_errors_ = 0;
  int64_t skipped_ = 0;
  int64_t last_sent_ns_ = -1;
  GapHistogram gaps_;
};

}  // namespace fabric_chaos::injectors
