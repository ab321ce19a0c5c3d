#pragma once
// The ring allreduce algorithm (float32 sum), independent of the transport: reduce-scatter then
// all-gather over n chunks, 2(n-1) steps, each step one concurrent send-to-next / recv-from-prev
// through a RingLink. A link failure aborts the collective with the link's Status; the output is
// then undefined and the caller restarts the whole iteration on a re-formed ring.
// A RingAllreduce is used by one thread at a time.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::workload {

// One rank's view of the ring: a byte stream to the next rank and one from the previous rank.
class RingLink {
 public:
  virtual ~RingLink() = default;
  // Sends send_bytes to the next rank while receiving exactly recv_bytes from the previous one.
  // Both directions progress concurrently so that neither side can deadlock on full buffers.
  // Returns when both are complete, or the first failure (peer gone, silent peer, stop requested).
  virtual core::Status sendRecv(const void* send, size_t send_bytes, void* recv,
                                size_t recv_bytes) = 0;
};

// Chunk `index` of `count` elements split into `world` near-equal parts (the first count % world
// chunks are one element longer).
struct ChunkRange {
  size_t begin = 0;
  size_t count = 0;
};
ChunkRange ringChunk(size_t count, int world, int index);

class RingAllreduce {
 public:
  // count: float32 elements per rank. Requires 0 <= rank < world.
  RingAllreduce(int rank, int world, size_t count);

  // output = element-wise sum of every rank's input. input and output hold count() floats and may
  // not overlap. With world == 1 this is a copy and the link is not used (it may be null).
  core::Status run(const float* input, float* output, RingLink* link);

  size_t count() const { return count_; }

 private:
  int rank_;
  int world_;
  size_t count_;
  std::vector<float> scratch_;  // one received chunk during reduce-scatter
};

}  // namespace fabric_chaos::workload
