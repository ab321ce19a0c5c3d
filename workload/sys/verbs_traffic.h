#pragma once
// The traffic generator's RDMA transport (`fabric-chaos traffic sink|source --transport verbs`):
// reliable-connected QPs set up with rdma_cm, one per flow. A source streams RDMA WRITE WITH
// IMMEDIATE messages into a buffer the sink registered for that flow, as perftest's ib_write_bw
// does, keeping up to `depth` of them in flight; the immediate carries the message's length, so
// the sink gets one completion per message and counts what arrived per flow without touching the
// payload. Bytes count at the source when the sink's NIC has acknowledged them.
// The sink posts twice `depth` receives per flow and reposts each as it completes, so a source
// outrunning it meets RNR NAKs (retried without limit, as a NIC would) rather than errors.
// Nothing here decides or retries: what happens comes back as events, a failed flow is torn down
// and may be connected again by the caller (app/verbs_traffic.cc). Single-threaded.

#include <signal.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

struct rdma_event_channel;
struct rdma_cm_id;

namespace fabric_chaos::workload {

struct VerbsTrafficEvent {
  enum class Kind {
    kOpened,     // sink: a flow was established; `text` is the peer, "10.0.0.2:41234"
    kConnected,  // source: the flow was established
    kBytes,      // sink: `bytes` arrived; source: `bytes` were acknowledged
    kClosed,     // sink: the flow ended; `text` says why
    kFailed,     // source: the attempt or the connection failed; `text` says why
  };
  Kind kind = Kind::kBytes;
  int flow = 0;
  int64_t bytes = 0;
  std::string text;
};

namespace verbs {

// The CM private data of a traffic flow. Request (source to sink, "FCT1"): the size of the
// messages it will write and how many it keeps in flight. Reply ("FCS1"): where to write them.
struct TrafficRequest {
  uint32_t message_bytes = 0;
  uint32_t depth = 0;
};
struct TrafficReply {
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t receives = 0;
};
inline constexpr size_t kTrafficRequestBytes = 12;
inline constexpr size_t kTrafficReplyBytes = 20;
inline constexpr uint32_t kMaxTrafficDepth = 128;
std::vector<uint8_t> encodeTrafficRequest(const TrafficRequest& r);
std::vector<uint8_t> encodeTrafficReply(const TrafficReply& r);
// nullopt when too short, the magic is wrong, or a field is out of range (message_bytes outside
// [1, max_message_bytes], depth outside [1, kMaxTrafficDepth]; receives 0). Padding is ignored.
std::optional<TrafficRequest> decodeTrafficRequest(const uint8_t* data, size_t len,
                                                   uint32_t max_message_bytes);
std::optional<TrafficReply> decodeTrafficReply(const uint8_t* data, size_t len);

// What a source may post on a flow: at most its depth in flight, and never more than the sink
// has receives for (the sink reposts as it goes, so this only bites when it posted fewer).
uint32_t sourceWindow(uint32_t depth, uint32_t sink_receives);

}  // namespace verbs

struct VerbsFlow;  // one QP with its CQ, channel, PD and buffer (verbs_traffic.cc)

class VerbsTrafficSink {
 public:
  // Listens on addr:port (numeric). kNotFound "no RDMA device ..." when the host has none or none
  // carries addr. Requests for messages over max_message_bytes are rejected.
  static core::Result<std::unique_ptr<VerbsTrafficSink>> listen(const std::string& addr, int port,
                                                                uint32_t max_message_bytes);
  ~VerbsTrafficSink();
  VerbsTrafficSink(const VerbsTrafficSink&) = delete;
  VerbsTrafficSink& operator=(const VerbsTrafficSink&) = delete;

  // Waits up to timeout_ns (the thread's signal mask is `mask` meanwhile, as with ppoll; nullptr
  // keeps it) for connection requests, disconnections and completions, handles them and appends
  // what happened. A failure of one flow closes that flow (an event); an error comes back only
  // when the sink as a whole cannot go on.
  core::Status wait(int64_t timeout_ns, const sigset_t* mask, std::vector<VerbsTrafficEvent>* out);
  size_t openFlows() const { return flows_.size(); }

 private:
  explicit VerbsTrafficSink(uint32_t max_message_bytes);
  void accept(rdma_cm_id* id, const std::vector<uint8_t>& request,
              std::vector<VerbsTrafficEvent>* out);
  void close(size_t index, const std::string& why, std::vector<VerbsTrafficEvent>* out);

  uint32_t max_message_bytes_;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  int next_flow_ = 0;
  std::vector<std::unique_ptr<VerbsFlow>> flows_;
};

struct VerbsSourceOptions {
  std::string addr;  // the sink's, numeric
  int port = 0;
  int flows = 1;
  int dscp = 0;  // the RoCEv2 packets' traffic class is dscp << 2 (RDMA_OPTION_ID_TOS)
  uint32_t message_bytes = 128 << 10;
  uint32_t depth = 16;  // messages in flight per flow
};

class VerbsTrafficSource {
 public:
  // kNotFound when the host has no RDMA device; kInvalidArgument naming the option otherwise.
  static core::Result<std::unique_ptr<VerbsTrafficSource>> create(const VerbsSourceOptions& o);
  ~VerbsTrafficSource();
  VerbsTrafficSource(const VerbsTrafficSource&) = delete;
  VerbsTrafficSource& operator=(const VerbsTrafficSource&) = delete;

  // Starts connecting an idle flow. A failure that comes at once comes back here and leaves the
  // flow idle; later ones come as kFailed events.
  core::Status connect(int flow);
  // Tears a flow down, whatever its state (a connection attempt that takes too long).
  void reset(int flow);
  bool idle(int flow) const;
  bool established(int flow) const;
  // How many more messages the flow may post now; 0 unless it is established.
  uint32_t room(int flow) const;
  // One RDMA WRITE WITH IMMEDIATE of `bytes` (1..message_bytes); requires room(flow) > 0. A
  // failure tears the flow down and comes back as a kFailed event too.
  void post(int flow, uint32_t bytes, std::vector<VerbsTrafficEvent>* out);
  // As VerbsTrafficSink::wait: CM events and completions of every flow.
  core::Status wait(int64_t timeout_ns, const sigset_t* mask, std::vector<VerbsTrafficEvent>* out);

 private:
  explicit VerbsTrafficSource(const VerbsSourceOptions& o);
  void fail(int flow, const std::string& why, std::vector<VerbsTrafficEvent>* out);

  VerbsSourceOptions options_;
  rdma_event_channel* channel_ = nullptr;
  std::vector<std::unique_ptr<VerbsFlow>> flows_;  // nullptr: idle
};

}  // namespace fabric_chaos::workload
