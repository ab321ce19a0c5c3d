#pragma once
// An in-memory ring for testing the allreduce algorithm: rank r writes to channel r and reads
// channel r-1, each an unbounded byte queue, so a send never blocks. Any link can be told to
// fail on its Nth sendRecv; a failure closes every channel so that the other ranks fail too
// instead of waiting forever (as closing sockets does in the TCP ring).

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "workload/ring.h"

namespace fabric_chaos::workload::testing {

class MemoryRing {
 public:
  explicit MemoryRing(int world) : world_(world), channels_(static_cast<size_t>(world)) {
    for (int r = 0; r < world; ++r) links_.push_back(std::make_unique<Link>(this, r));
  }

  RingLink& link(int rank) { return *links_[rank]; }
  // The link of `rank` fails on its nth sendRecv (1-based); 0 disables.
  void failOnCall(int rank, int n) { links_[rank]->fail_on_call = n; }
  int64_t calls(int rank) const { return links_[rank]->calls; }

  void closeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }

 private:
  struct Link : RingLink {
    Link(MemoryRing* ring, int rank) : ring(ring), rank(rank) {}
    core::Status sendRecv(const void* send, size_t send_bytes, void* recv,
                          size_t recv_bytes) override {
      ++calls;
      if (fail_on_call > 0 && calls == fail_on_call) {
        ring->closeAll();
        return core::Status(core::StatusCode::kUnavailable, "injected failure");
      }
      return ring->transfer(rank, static_cast<const uint8_t*>(send), send_bytes,
                            static_cast<uint8_t*>(recv), recv_bytes);
    }
    MemoryRing* ring;
    int rank;
    int64_t fail_on_call = 0;
    int64_t calls = 0;
  };

  core::Status transfer(int rank, const uint8_t* send, size_t send_bytes, uint8_t* recv,
                        size_t recv_bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    if (closed_) return core::Status(core::StatusCode::kUnavailable, "ring closed");
    channels_[rank].insert(channels_[rank].end(), send, send + send_bytes);
    cv_.notify_all();
    auto& in = channels_[(rank - 1 + world_) % world_];
    size_t got = 0;
    while (got < recv_bytes) {
      cv_.wait(lock, [&] { return closed_ || !in.empty(); });
      if (closed_) return core::Status(core::StatusCode::kUnavailable, "ring closed");
      size_t n = std::min(recv_bytes - got, in.size());
      std::copy(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n), recv + got);
      in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
      got += n;
    }
    return core::Status::ok();
  }

  int world_;
  std::vector<std::deque<uint8_t>> channels_;  // channel r carries rank r -> rank r+1
  std::vector<std::unique_ptr<Link>> links_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
};

}  // namespace fabric_chaos::workload::testing
