#pragma once
// The RDMA verbs transport of the ring: the only workload code that touches libibverbs and
// librdmacm. It owns one rdma_cm event channel, one listening rdma_cm_id (RDMA_PS_TCP on
// listen_addr:listen_port, kept for the whole run) and two reliable-connected QPs: to the next
// rank (we rdma_connect) and from the previous rank (we rdma_accept). Each QP has its own PD, CQ,
// completion channel and one registered buffer of `slots` slots; chunks travel as RDMA SENDs into
// pre-posted receives, and the receiver hands credits back (zero-byte SEND_WITH_IMM) as it frees
// slots, so a sender never finds no receive posted. A link idle for one ACK timeout gets a
// zero-byte RDMA WRITE probe, so a dead peer surfaces as IBV_WC_RETRY_EXC_ERR even when we have
// nothing to send it (a keepalive; a live but busy peer's NIC still ACKs it). Failures come back
// as Status plus a
// LinkFailure (reason, ibv_wc_status_str, rdma_event_str) and are never fatal: the caller
// disconnect()s and form()s again with a bumped epoch, exactly as with TcpRing.
// Single-threaded: one rank thread calls everything; the atomics in the options may be set from
// any thread.
//
// RingLink::sendRecv failures (LinkFailure::reason):
//   timeout   nothing completed in either direction for peer_timeout_ms, or the transport gave up
//             (IBV_WC_RETRY_EXC_ERR / IBV_WC_RNR_RETRY_EXC_ERR: no ACK within the retry budget)
//   eof       the peer disconnected (RDMA_CM_EVENT_DISCONNECTED); our QP is then moved to the error
//             state and wc_status is the first flushed completion. As with TCP, what arrived
//             before is still delivered: a step that can complete without the link does.
//   aborted   stop was requested, or the test hook aborted the connections
//   error     any other completion error, device removal or unexpected verbs failure

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "workload/ring.h"

struct rdma_event_channel;
struct rdma_cm_id;

namespace fabric_chaos::workload {

struct VerbsRingOptions {
  int rank = 0;
  int world = 2;
  std::string listen_addr = "127.0.0.1";  // numeric IPv4 or IPv6 of an RDMA-capable netdev
  int listen_port = 0;                    // 0: rdma_cm picks one (see listenPort())
  std::string next_addr = "127.0.0.1";
  int next_port = 0;
  int64_t peer_timeout_ms = 10000;
  // IPv4 DSCP of the outgoing connection's packets: RoCEv2 carries the QP's traffic class
  // (dscp << 2) in the IP header, so a lossless class can be classified and paused by it.
  int dscp = 0;
  // Largest payload of one SEND; a longer sendRecv is split into segments of this size. The rank
  // passes its largest ring chunk so that one step is one message.
  size_t slot_bytes = 256 * 1024;
  uint32_t slots = 4;  // receive slots per QP = the sender's credit window
  // How long sendRecv spins on the CQs before it arms them and sleeps in poll().
  int64_t busy_poll_us = 50;
  const std::atomic<bool>* stop = nullptr;  // polled at least every 50 ms inside every wait
  // Test hook: when it becomes true, sendRecv moves both QPs to the error state without telling
  // the CM (the neighbours' packets go unanswered, as with a dead NIC or host), keeps the
  // connections that way until the neighbours' transport retries have run out, clears the flag
  // and returns kAborted.
  std::atomic<bool>* abort_connections = nullptr;
};

// Why the last sendRecv failed, for the peer_lost event.
struct LinkFailure {
  std::string reason;     // timeout | eof | aborted | error
  std::string wc_status;  // ibv_wc_status_str of the first failed completion; empty when none
  std::string cm_event;   // rdma_event_str of the CM event that ended the link; empty when none
};

struct VerbsConn;  // one side of the ring: cm id, PD, CQ, channel, QP, MR (verbs_ring.cc)

class VerbsRing : public RingLink {
 public:
  // Checks for an RDMA device, creates the event channel and listens (rdma_bind_addr +
  // rdma_listen) on listen_addr:listen_port. kNotFound "no RDMA device: ..." when the host has
  // none or none carries listen_addr.
  static core::Result<std::unique_ptr<VerbsRing>> listen(const VerbsRingOptions& options);
  ~VerbsRing() override;
  VerbsRing(const VerbsRing&) = delete;
  VerbsRing& operator=(const VerbsRing&) = delete;

  int listenPort() const { return listen_port_; }

  // Connects to the next rank (rdma_resolve_addr, rdma_resolve_route, rdma_connect; retried every
  // 50 ms) and accepts from the previous one, concurrently, until both are ESTABLISHED. The
  // CM private data carries rank, world, epoch and the receiver's slot count and size; a request
  // from a rank other than our previous rank, or of another world, is rejected. Returns the
  // highest epoch seen; kTimeout at deadline_ns, kAborted on stop.
  core::Result<uint32_t> form(uint32_t epoch, int64_t deadline_ns);

  // Waits (at most min(peer_timeout_ms, 1 s)) for our SENDs to the next rank to be ACKed, as
  // close() lets queued data reach the peer, then rdma_disconnect()s both QPs (the neighbours see
  // RDMA_CM_EVENT_DISCONNECTED) and frees their resources: QP, CQ, completion channel, MR, PD,
  // then the cm id.
  void disconnect();
  bool connected() const;

  core::Status sendRecv(const void* send, size_t send_bytes, void* recv,
                        size_t recv_bytes) override;

  const LinkFailure& lastFailure() const { return last_failure_; }
  int rejectedHandshakes() const { return rejected_handshakes_; }
  // The QP ACK timeout exponent and retry count used for both QPs (see verbs:: helpers below).
  uint8_t ackTimeoutExponent() const { return ack_timeout_; }

 private:
  struct PendingRequest;

  explicit VerbsRing(const VerbsRingOptions& options);
  bool stopRequested() const;
  core::Status listenOnce();
  core::Status fail(core::Status status, std::string reason, std::string wc_status = "",
                    std::string cm_event = "");
  void destroyListener();
  void dropPending();
  // Reads every queued CM event while connected; a failure of one of our links comes back.
  core::Status drainCmEventsConnected();
  core::Status pollCompletions(VerbsConn& conn, bool* progress);
  core::Status waitForEvents(int64_t timeout_ms);
  void markGone(VerbsConn& conn, const std::string& cm_event);
  // The failure of a link that can no longer carry this step, if any.
  core::Status linkFailure();
  // Waits (bounded) until every SEND to the next rank has completed.
  void drainSends();
  void abortConnections();

  VerbsRingOptions options_;
  uint8_t ack_timeout_ = 14;
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listen_id_ = nullptr;
  int listen_port_ = 0;
  std::unique_ptr<VerbsConn> next_;                       // we send on it
  std::unique_ptr<VerbsConn> prev_;                       // we receive on it
  std::vector<std::unique_ptr<PendingRequest>> pending_;  // requests that came while connected
  LinkFailure last_failure_;
  int rejected_handshakes_ = 0;
};

// Pure helpers of the verbs ring, exposed for table tests.
namespace verbs {

// RC QP parameters. The ACK timeout is 4.096 us * 2^exponent; after retry_cnt unanswered
// retransmissions the send fails with IBV_WC_RETRY_EXC_ERR, so a dead path surfaces after about
// (kRetryCount + 1) * 4.096 us * 2^exponent. kRetryCount is 6, not 7: rxe treats retry_cnt 7 as
// "retry forever" (rxe_comp.c only decrements a count that is not 7), which would hide the error.
// RNR retries are finite too: the credit window makes RNR impossible, so one is a bug to surface.
inline constexpr uint8_t kRetryCount = 6;
inline constexpr uint8_t kRnrRetryCount = 6;
inline constexpr uint8_t kMinAckTimeout = 14;  // 67 ms: above the ACK delay of rxe under TCG
inline constexpr uint8_t kMaxAckTimeout = 20;  // 4.3 s
// The largest exponent in [kMinAckTimeout, kMaxAckTimeout] whose whole retry budget,
// (kRetryCount + 1) * 4.096 us * 2^t, fits in half of peer_timeout_ms, so that a dead path is
// reported by the transport (with its wc status) before the generic peer timeout fires.
uint8_t ackTimeoutExponent(int64_t peer_timeout_ms);
// (kRetryCount + 1) * 4.096 us * 2^exponent, in milliseconds.
double retryBudgetMs(uint8_t exponent);

// The CM private data of both directions: 24 bytes, big-endian, magic "FCQ1" (request, from the
// connecting rank) or "FCP1" (reply, from the accepting rank). slots/slot_bytes describe the
// sender's receive buffers: in the reply they are the connecting rank's credit window.
struct Handshake {
  uint32_t rank = 0;
  uint32_t world = 0;
  uint32_t epoch = 0;
  uint32_t slots = 0;
  uint32_t slot_bytes = 0;
};
inline constexpr size_t kHandshakeBytes = 24;
std::vector<uint8_t> encodeHandshake(const Handshake& h, bool reply);
// nullopt when too short, the magic is wrong, or a field is out of range. The transport may
// deliver more bytes than were sent (padding): they are ignored.
std::optional<Handshake> decodeHandshake(const uint8_t* data, size_t len, bool reply);

// Splitting `bytes` into SEND segments of at most `slot_bytes`: the size of segment `index`.
size_t segmentCount(size_t bytes, size_t slot_bytes);
size_t segmentBytes(size_t bytes, size_t slot_bytes, size_t index);

// The sending side of one QP: a message needs a credit (a receive the peer has posted) and a free
// registered send slot. Send slots are reused in order, as RC send completions arrive in order.
class SendCredits {
 public:
  SendCredits(uint32_t slots, uint32_t initial_credits)
      : slots_(slots), free_(slots), credits_(initial_credits) {}
  bool canSend() const { return credits_ > 0 && free_ > 0; }
  // Takes a credit and the next send slot; requires canSend().
  uint32_t take();
  void sendCompleted() { ++free_; }
  void granted(uint32_t credits) { credits_ += credits; }
  uint32_t credits() const { return credits_; }
  uint32_t freeSlots() const { return free_; }

 private:
  uint32_t slots_;
  uint32_t free_;
  uint32_t credits_;
  uint32_t next_ = 0;
};

// The receiving side: received segments queue up (a fast previous rank may already be sending the
// next step) and are consumed as a byte stream; every emptied slot is reposted and owed back to
// the sender as a credit, sent in batches with at most max_credit_sends credit messages in flight.
class RecvStream {
 public:
  explicit RecvStream(uint32_t max_credit_sends) : max_credit_sends_(max_credit_sends) {}
  void arrived(uint32_t slot, size_t bytes) { queue_.push_back({slot, bytes, 0}); }
  // Copies up to `want` bytes from the queued segments (slot i starts at base + i * slot_bytes)
  // into dst; emptied slots are appended to *freed. Returns the bytes copied.
  size_t consume(const uint8_t* base, size_t slot_bytes, uint8_t* dst, size_t want,
                 std::vector<uint32_t>* freed);
  void reposted(uint32_t n) { owed_ += n; }
  // Credits to send now (0: nothing owed, or too many credit messages in flight).
  uint32_t takeCreditsToSend();
  void creditSendCompleted() { --credit_sends_in_flight_; }
  size_t queuedSegments() const { return queue_.size(); }
  uint32_t owed() const { return owed_; }

 private:
  struct Segment {
    uint32_t slot;
    size_t bytes;
    size_t offset;
  };
  std::deque<Segment> queue_;
  uint32_t max_credit_sends_;
  uint32_t owed_ = 0;
  uint32_t credit_sends_in_flight_ = 0;
};

// The peer_lost reason for a failed completion's ibv_wc_status value.
const char* reasonForWcStatus(int wc_status);

}  // namespace verbs
}  // namespace fabric_chaos::workload
