#pragma once
// Group commit: callers that write at the same time share one transaction, hence one fsync. Each
// caller submits its batch and waits; the first to find no commit in progress becomes the leader,
// takes every batch queued so far (its own included) and commits them together through the
// function it is given, which sets each batch's own status; the others wake with theirs. A batch
// is acknowledged only once the commit that holds it returned, as when each caller committed
// alone. No thread of its own: under no contention a batch is one transaction, as before.

#include <condition_variable>
#include <mutex>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::store {

template <typename Batch>
class GroupCommit {
 public:
  struct Pending {
    const Batch* batch;
    core::Status status;  // set by the commit function
    bool done = false;
  };
  using Group = std::vector<Pending*>;

  // Blocks until a commit that holds `batch` has returned; its status for this batch.
  template <typename CommitFn>
  core::Status submit(const Batch& batch, CommitFn&& commit) {
    Pending mine{&batch, core::Status::ok()};
    std::unique_lock lock(mu_);
    queue_.push_back(&mine);
    cv_.wait(lock, [&] { return mine.done || !leading_; });
    if (mine.done) return mine.status;
    leading_ = true;
    Group group;
    group.swap(queue_);
    lock.unlock();
    commit(group);
    lock.lock();
    for (Pending* pending : group) pending->done = true;
    leading_ = false;
    ++commits_;
    lock.unlock();
    cv_.notify_all();
    return mine.status;
  }

  // How many commits ran (each of one or more batches): for tests and benches.
  int64_t commits() const {
    std::lock_guard lock(mu_);
    return commits_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Group queue_;
  bool leading_ = false;
  int64_t commits_ = 0;
};

}  // namespace fabric_chaos::store
