#include "injectors/pfc/pfc_emit_timing.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

namespace fabric_chaos::injectors {
namespace {

// Values below 2^kSubBits have a bucket each; above, every power of two has 2^kSubBits buckets.
constexpr int kSubBits = 7;
constexpr int64_t kSubCount = int64_t{1} << kSubBits;
constexpr int kTopBit = 62;  // the highest bit of a positive int64
constexpr size_t kBucketCount = kSubCount + (kTopBit - kSubBits + 1) * kSubCount;

size_t bucketOf(int64_t value) {
  if (value < kSubCount) return static_cast<size_t>(value);
  const int msb = 63 - std::countl_zero(static_cast<uint64_t>(value));
  const int shift = msb - kSubBits;
  const int64_t sub = (value >> shift) - kSubCount;  // 0..kSubCount-1
  return static_cast<size_t>(kSubCount + (msb - kSubBits) * kSubCount + sub);
}

// The middle of bucket i.
int64_t bucketMiddle(size_t i) {
  if (static_cast<int64_t>(i) < kSubCount) return static_cast<int64_t>(i);
  const int64_t rest = static_cast<int64_t>(i) - kSubCount;
  const int shift = static_cast<int>(rest / kSubCount);
  const int64_t low = (kSubCount + rest % kSubCount) << shift;
  return low + ((int64_t{1} << shift) - 1) / 2;
}

// Microseconds with at most `decimals` decimals, trailing zeros dropped: 1000, 167.5.
std::string micros(int64_t ns, int decimals) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, static_cast<double>(ns) / 1000.0);
  std::string text = buf;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

}  // namespace

PfcPacer::PfcPacer(int64_t start_ns, int64_t period_ns, int64_t on_ns, int64_t off_ns)
    : start_ns_(start_ns),
      period_ns_(std::max<int64_t>(period_ns, 1)),
      on_ns_(on_ns > 0 ? on_ns : 0),
      cycle_ns_(on_ns > 0 ? on_ns + std::max<int64_t>(off_ns, 0) : 0),
      per_cycle_(on_ns > 0 ? (on_ns - 1) / period_ns_ + 1 : 0),
      next_ns_(start_ns) {}

int64_t PfcPacer::countUpTo(int64_t t) const {
  if (t < start_ns_) return 0;
  const int64_t rel = t - start_ns_;
  if (cycle_ns_ == 0) return rel / period_ns_ + 1;
  const int64_t cycles = rel / cycle_ns_;
  const int64_t in_cycle = rel % cycle_ns_;
  const int64_t in_phase = in_cycle < on_ns_ ? in_cycle / period_ns_ + 1 : per_cycle_;
  return cycles * per_cycle_ + in_phase;
}

int64_t PfcPacer::firstAfter(int64_t t) const {
  if (t < start_ns_) return start_ns_;
  const int64_t rel = t - start_ns_;
  if (cycle_ns_ == 0) return start_ns_ + (rel / period_ns_ + 1) * period_ns_;
  const int64_t cycle_start = start_ns_ + rel / cycle_ns_ * cycle_ns_;
  const int64_t in_cycle = rel % cycle_ns_;
  if (in_cycle < on_ns_) {
    const int64_t offset = (in_cycle / period_ns_ + 1) * period_ns_;
    if (offset < on_ns_) return cycle_start + offset;
  }
  return cycle_start + cycle_ns_;
}

PfcPacer::Due PfcPacer::due(int64_t now_ns) {
  Due result;
  if (now_ns < next_ns_) return result;
  const int64_t owed = countUpTo(now_ns) - countUpTo(next_ns_ - 1);
  result.frames = static_cast<int>(std::min<int64_t>(owed, kMaxPfcBurstFrames));
  result.skipped = owed - result.frames;
  next_ns_ = firstAfter(now_ns);
  return result;
}

GapHistogram::GapHistogram() : buckets_(kBucketCount, 0) {}

void GapHistogram::record(int64_t gap_ns) {
  gap_ns = std::max<int64_t>(gap_ns, 0);
  ++buckets_[bucketOf(gap_ns)];
  ++count_;
  max_ns_ = std::max(max_ns_, gap_ns);
}

int64_t GapHistogram::quantileNs(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * count_)));
  int64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(bucketMiddle(i), max_ns_);
  }
  return max_ns_;
}

void PfcEmitRecorder::sent(int64_t now_ns, bool timed) {
  ++frames_;
  if (!timed) return;
  if (last_sent_ns_ >= 0) gaps_.record(now_ns - last_sent_ns_);
  last_sent_ns_ = now_ns;
}

std::string PfcEmitRecorder::jsonLine(int64_t now_ns, bool final) const {
  std::string line =
      "{\"frames\":" + std::to_string(frames_) +
      ",\"send_errors\":" + std::to_string(send_errors_) +
      ",\"skipped\":" + std::to_string(skipped_) +
      ",\"elapsed_ms\":" + std::to_string(std::max<int64_t>(0, now_ns - start_ns_) / 1'000'000) +
      ",\"gap_us\":{\"p50\":" + micros(gaps_.quantileNs(0.5), 1) +
      ",\"p99\":" + micros(gaps_.quantileNs(0.99), 1) + ",\"max\":" + micros(gaps_.maxNs(), 1) +
      "},\"period_us\":" + micros(period_ns_, 3);
  if (final) line += ",\"final\":true";
  line += "}";
  return line;
}

}  // namespace fabric_chaos::injectors
