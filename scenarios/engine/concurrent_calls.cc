#include "scenarios/engine/concurrent_calls.h"

#include <algorithm>
#include <exception>
#include <system_error>

namespace fabric_chaos::scenarios {

using core::Status;

ConcurrentCalls::~ConcurrentCalls() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ConcurrentCalls::reserve(size_t width) {
  const size_t wanted = std::min(width > 0 ? width - 1 : 0, kMaxWorkers);
  while (workers_.size() < wanted) {
    try {
      workers_.emplace_back([this] { workerLoop(); });
    } catch (const std::system_error&) {
      return;  // fewer workers: calls wait their turn, late but made
    }
  }
}

bool ConcurrentCalls::runNext(std::unique_lock<std::mutex>& lock) {
  if (batch_ == nullptr || next_ >= batch_->size()) return false;
  const size_t index = next_++;
  const std::function<Status()>& call = (*batch_)[index];
  std::vector<Status>* results = results_;
  lock.unlock();
  Status result;
  try {
    result = call();
  } catch (const std::exception& e) {
    result = Status(core::StatusCode::kInternal, std::string("the call threw: ") + e.what());
  }
  lock.lock();
  (*results)[index] = std::move(result);
  if (++finished_ == batch_->size()) done_cv_.notify_all();
  return true;
}

void ConcurrentCalls::workerLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_cv_.wait(lock,
                  [this] { return stopping_ || (batch_ != nullptr && next_ < batch_->size()); });
    if (stopping_) return;
    while (runNext(lock)) {
    }
  }
}

std::vector<Status> ConcurrentCalls::run(const std::vector<std::function<Status()>>& calls) {
  std::vector<Status> results(calls.size());
  if (calls.empty()) return results;
  std::lock_guard one_batch(run_mu_);
  reserve(calls.size());
  std::unique_lock lock(mu_);
  batch_ = &calls;
  results_ = &results;
  next_ = 0;
  finished_ = 0;
  if (calls.size() > 1) work_cv_.notify_all();
  while (runNext(lock)) {
  }
  done_cv_.wait(lock, [&] { return finished_ == calls.size(); });
  batch_ = nullptr;
  results_ = nullptr;
  return results;
}

}  // namespace fabric_chaos::scenarios
