#include "workload/ring.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace fabric_chaos::workload {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

ChunkRange ringChunk(size_t count, int world, int index) {
  const auto n = static_cast<size_t>(world);
  const auto i = static_cast<size_t>(index);
  const size_t base = count / n;
  const size_t extra = count % n;
  ChunkRange r;
  r.begin = i * base + std::min(i, extra);
  r.count = base + (i < extra ? 1 : 0);
  return r;
}

RingAllreduce::RingAllreduce(int rank, int world, size_t count)
    : rank_(rank), world_(world), count_(count) {
  assert(world >= 1 && rank >= 0 && rank < world);
  if (world_ > 1) scratch_.resize(ringChunk(count_, world_, 0).count);
}

core::Status RingAllreduce::run(const float* input, float* output, RingLink* link) {
  if (count_ > 0) std::memcpy(output, input, count_ * sizeof(float));
  if (world_ == 1) return core::Status::ok();
  assert(link != nullptr);

  // Reduce-scatter: at step s, send chunk (rank - s) and add the received chunk (rank - s - 1).
  // After n-1 steps this rank holds the full sum of chunk (rank + 1).
  for (int step = 0; step < world_ - 1; ++step) {
    const ChunkRange send = ringChunk(count_, world_, mod(rank_ - step, world_));
    const ChunkRange recv = ringChunk(count_, world_, mod(rank_ - step - 1, world_));
    FC_RETURN_IF_ERROR(link->sendRecv(output + send.begin, send.count * sizeof(float),
                                      scratch_.data(), recv.count * sizeof(float)));
    float* dst = output + recv.begin;
    for (size_t i = 0; i < recv.count; ++i) dst[i] += scratch_[i];
  }
  // All-gather: at step s, forward chunk (rank + 1 - s) and receive the finished chunk (rank - s)
  // straight into place. The send and receive chunks never coincide for n >= 2.
  for (int step = 0; step < world_ - 1; ++step) {
    const ChunkRange send = ringChunk(count_, world_, mod(rank_ + 1 - step, world_));
    const ChunkRange recv = ringChunk(count_, world_, mod(rank_ - step, world_));
    FC_RETURN_IF_ERROR(link->sendRecv(output + send.begin, send.count * sizeof(float),
                                      output + recv.begin, recv.count * sizeof(float)));
  }
  return core::Status::ok();
}

}  // namespace fabric_chaos::workload
