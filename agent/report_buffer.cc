#include "agent/report_buffer.h"

#include <algorithm>
#include <chrono>

#include "core/clock.h"

namespace fabric_chaos::agent {

using nlohmann::json;

ReportBuffer::ReportBuffer(int64_t origin_ns, int ranks, size_t capacity)
    : origin_ns_(origin_ns), ranks_(ranks), capacity_(std::max<size_t>(1, capacity)) {}

void ReportBuffer::pushLocked(Entry entry) {
  entry.seq = ++last_seq_;
  if (entries_.size() >= capacity_) {
    evicted_through_seq_ = entries_.front().seq;
    entries_.pop_front();
    ++dropped_total_;
  }
  entries_.push_back(std::move(entry));
}

void ReportBuffer::onSamples(const std::vector<core::Sample>& samples) {
  {
    std::lock_guard lock(mu_);
    for (const auto& sample : samples) {
      Entry entry;
      entry.rank = sample.rank;
      entry.iteration = sample.iteration;
      entry.t_ns = std::llround(sample.start_ms * 1e6);
      entry.duration_ns = std::llround(sample.duration_ms * 1e6);
      entry.bytes = sample.bytes;
      pushLocked(std::move(entry));
    }
  }
  cv_.notify_all();
}

void ReportBuffer::onEvent(int rank, double t_ms, const std::string& kind, const json& detail) {
  {
    std::lock_guard lock(mu_);
    Entry entry;
    entry.is_event = true;
    entry.rank = rank;
    entry.t_ns = std::llround(t_ms * 1e6);
    entry.kind = kind;
    entry.detail = detail;
    pushLocked(std::move(entry));
  }
  cv_.notify_all();
}

void ReportBuffer::onRankExit(int rank, int exit_code) {
  {
    std::lock_guard lock(mu_);
    exits_.push_back({++last_seq_, rank, exit_code});
  }
  cv_.notify_all();
}

void ReportBuffer::markStopped() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

void ReportBuffer::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool ReportBuffer::complete() const {
  std::lock_guard lock(mu_);
  return stopped_ || static_cast<int>(exits_.size()) >= ranks_;
}

int64_t ReportBuffer::exitsBetweenLocked(int64_t after, int64_t through) const {
  int64_t n = 0;
  for (const auto& exit : exits_) n += (exit.seq > after && exit.seq <= through) ? 1 : 0;
  return n;
}

ReportBuffer::Batch ReportBuffer::fetch(int64_t after, size_t max_entries, int wait_ms) {
  std::unique_lock lock(mu_);
  auto finished = [&] { return stopped_ || static_cast<int>(exits_.size()) >= ranks_; };
  if (wait_ms > 0) {
    cv_.wait_for(lock, std::chrono::milliseconds(wait_ms),
                 [&] { return last_seq_ > after || closed_ || finished(); });
  }
  Batch batch;
  auto first = std::partition_point(entries_.begin(), entries_.end(),
                                    [&](const Entry& e) { return e.seq <= after; });
  int64_t hi = after;
  size_t taken = 0;
  auto it = first;
  for (; it != entries_.end() && taken < std::max<size_t>(1, max_entries); ++it, ++taken) {
    if (it->is_event) {
      batch.events.push_back(
          {{"rank", it->rank}, {"t_ns", it->t_ns}, {"kind", it->kind}, {"detail", it->detail}});
    } else {
      batch.samples.push_back(
          json::array({it->rank, it->iteration, it->t_ns, it->duration_ns, it->bytes}));
    }
    hi = it->seq;
  }
  const bool more = it != entries_.end();
  if (!more) hi = std::max(hi, last_seq_);  // trailing exits
  for (const auto& exit : exits_) {
    if (exit.seq > after && exit.seq <= hi) {
      batch.exits.push_back({{"rank", exit.rank}, {"code", exit.code}});
    }
  }
  if (evicted_through_seq_ > after) {
    const int64_t missed =
        (evicted_through_seq_ - after) - exitsBetweenLocked(after, evicted_through_seq_);
    if (missed > 0) {
      batch.events.push_back(
          {{"rank", -1},
           {"t_ns", core::steadyNowNs() - origin_ns_},
           {"kind", "reports_dropped"},
           {"detail",
            {{"count", missed},
             {"dropped_total", dropped_total_},
             {"reason", "the agent buffers at most " + std::to_string(capacity_) +
                            " samples and events per workload and the controller did not "
                            "fetch them in time"}}}});
    }
  }
  batch.next = hi;
  batch.running = std::max(0, ranks_ - static_cast<int>(exits_.size()));
  batch.complete = finished() && hi >= last_seq_;
  batch.dropped_total = dropped_total_;
  return batch;
}

}  // namespace fabric_chaos::agent
