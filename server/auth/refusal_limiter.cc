#include "server/auth/refusal_limiter.h"

#include <algorithm>

namespace fabric_chaos::auth {

namespace {

RefusalLimiter::Summary summaryOf(const std::string& source, int64_t start_ms, int64_t refusals,
                                  int64_t throttled) {
  return {source, start_ms, std::max<int64_t>(0, refusals - 1), throttled};
}

}  // namespace

void RefusalLimiter::closeEnded(int64_t now_ms, bool all, std::vector<Summary>* out) {
  if (!all && now_ms < earliest_end_ms_) return;
  earliest_end_ms_ = INT64_MAX;
  for (auto it = windows_.begin(); it != windows_.end();) {
    const Window& w = it->second;
    if (all || now_ms >= w.start_ms + options_.window_ms) {
      if (w.refusals > 1 || w.throttled > 0) {
        out->push_back(summaryOf(it->first, w.start_ms, w.refusals, w.throttled));
      }
      it = windows_.erase(it);
    } else {
      earliest_end_ms_ = std::min(earliest_end_ms_, w.start_ms + options_.window_ms);
      ++it;
    }
  }
}

void RefusalLimiter::closeEarliest(std::vector<Summary>* out) {
  auto earliest = std::min_element(
      windows_.begin(), windows_.end(),
      [](const auto& a, const auto& b) { return a.second.start_ms < b.second.start_ms; });
  if (earliest == windows_.end()) return;
  const Window& w = earliest->second;
  if (w.refusals > 1 || w.throttled > 0) {
    out->push_back(summaryOf(earliest->first, w.start_ms, w.refusals, w.throttled));
  }
  windows_.erase(earliest);
}

RefusalLimiter::Verdict RefusalLimiter::refused(const std::string& source, int64_t now_ms) {
  std::lock_guard lock(mu_);
  closeEnded(now_ms, false, &closed_);
  auto it = windows_.find(source);
  if (it == windows_.end()) {
    if (windows_.size() >= options_.max_sources) closeEarliest(&closed_);
    windows_[source] = Window{now_ms, 1, 0};
    earliest_end_ms_ = std::min(earliest_end_ms_, now_ms + options_.window_ms);
    return Verdict::kRecord;
  }
  ++it->second.refusals;
  return Verdict::kCount;
}

std::optional<int64_t> RefusalLimiter::throttle(const std::string& source, int64_t now_ms) {
  std::lock_guard lock(mu_);
  closeEnded(now_ms, false, &closed_);
  auto it = windows_.find(source);
  if (it == windows_.end() || it->second.refusals < options_.max_per_window) return std::nullopt;
  ++it->second.throttled;
  return it->second.start_ms + options_.window_ms - now_ms;
}

std::vector<RefusalLimiter::Summary> RefusalLimiter::takeEnded(int64_t now_ms, bool all) {
  std::lock_guard lock(mu_);
  std::vector<Summary> out;
  out.swap(closed_);
  closeEnded(now_ms, all, &out);
  return out;
}

}  // namespace fabric_chaos::auth
