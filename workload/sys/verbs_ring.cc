#include "workload/sys/verbs_ring.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "core/clock.h"
#include "workload/sys/byte_order.h"
#include "workload/sys/endpoint.h"
#include "workload/sys/verbs_cm.h"

namespace fabric_chaos::workload {

using core::Result;
using core::Status;
using core::StatusCode;

namespace verbs {

double retryBudgetMs(uint8_t exponent) {
  return (kRetryCount + 1) * 4.096e-3 * std::ldexp(1.0, exponent);
}

uint8_t ackTimeoutExponent(int64_t peer_timeout_ms) {
  const double budget_ms = static_cast<double>(peer_timeout_ms) / 2.0;
  for (uint8_t t = kMaxAckTimeout; t > kMinAckTimeout; --t) {
    if (retryBudgetMs(t) <= budget_ms) return t;
  }
  return kMinAckTimeout;
}

namespace {

constexpr char kRequestMagic[4] = {'F', 'C', 'Q', '1'};
constexpr char kReplyMagic[4] = {'F', 'C', 'P', '1'};
constexpr uint32_t kMaxWorld = 65536;
constexpr uint32_t kMaxSlotsOnWire = 4096;
constexpr uint32_t kMaxSlotBytesOnWire = 64u << 20;

}  // namespace

std::vector<uint8_t> encodeHandshake(const Handshake& h, bool reply) {
  std::vector<uint8_t> out(kHandshakeBytes);
  std::memcpy(out.data(), reply ? kReplyMagic : kRequestMagic, 4);
  putU32(out.data() + 4, h.rank);
  putU32(out.data() + 8, h.world);
  putU32(out.data() + 12, h.epoch);
  putU32(out.data() + 16, h.slots);
  putU32(out.data() + 20, h.slot_bytes);
  return out;
}

std::optional<Handshake> decodeHandshake(const uint8_t* data, size_t len, bool reply) {
  if (data == nullptr || len < kHandshakeBytes) return std::nullopt;
  if (std::memcmp(data, reply ? kReplyMagic : kRequestMagic, 4) != 0) return std::nullopt;
  Handshake h;
  h.rank = getU32(data + 4);
  h.world = getU32(data + 8);
  h.epoch = getU32(data + 12);
  h.slots = getU32(data + 16);
  h.slot_bytes = getU32(data + 20);
  if (h.world < 2 || h.world > kMaxWorld || h.rank >= h.world) return std::nullopt;
  if (h.slots < 1 || h.slots > kMaxSlotsOnWire) return std::nullopt;
  if (h.slot_bytes < 1 || h.slot_bytes > kMaxSlotBytesOnWire) return std::nullopt;
  return h;
}

size_t segmentCount(size_t bytes, size_t slot_bytes) {
  return slot_bytes == 0 ? 0 : (bytes + slot_bytes - 1) / slot_bytes;
}

size_t segmentBytes(size_t bytes, size_t slot_bytes, size_t index) {
  if (index >= segmentCount(bytes, slot_bytes)) return 0;
  return std::min(slot_bytes, bytes - index * slot_bytes);
}

uint32_t SendCredits::take() {
  assert(canSend());
  --credits_;
  --free_;
  const uint32_t slot = next_;
  next_ = (next_ + 1) % slots_;
  return slot;
}

size_t RecvStream::consume(const uint8_t* base, size_t slot_bytes, uint8_t* dst, size_t want,
                           std::vector<uint32_t>* freed) {
  size_t copied = 0;
  while (copied < want && !queue_.empty()) {
    Segment& s = queue_.front();
    const size_t n = std::min(want - copied, s.bytes - s.offset);
    if (n > 0) std::memcpy(dst + copied, base + s.slot * slot_bytes + s.offset, n);
    s.offset += n;
    copied += n;
    if (s.offset == s.bytes) {
      freed->push_back(s.slot);
      queue_.pop_front();
    }
  }
  return copied;
}

uint32_t RecvStream::takeCreditsToSend() {
  if (owed_ == 0 || credit_sends_in_flight_ >= max_credit_sends_) return 0;
  const uint32_t n = owed_;
  owed_ = 0;
  ++credit_sends_in_flight_;
  return n;
}

const char* reasonForWcStatus(int wc_status) {
  switch (wc_status) {
    case IBV_WC_SUCCESS:
      return "";
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "timeout";
    default:
      return "error";
  }
}

}  // namespace verbs

namespace {

using verbs::CmEvent;
using verbs::cmEventText;
using verbs::nextCmEvent;
using verbs::setNonBlocking;

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kPollSliceMs = 50;
constexpr int64_t kRetryNs = 50 * kNsPerMs;  // between connection attempts to the next rank
constexpr int kResolveTimeoutMs = 2000;      // rdma_resolve_addr / rdma_resolve_route
constexpr size_t kMaxPending = 16;           // requests kept for the next form()
constexpr int kCqBatch = 16;
constexpr size_t kMinSlotBytes = 64;
constexpr size_t kMaxSlotBytes = size_t{4} << 20;
constexpr uint32_t kMaxSlots = 256;
constexpr int64_t kFlushWaitNs = 200 * kNsPerMs;  // for the first flushed completion

// kProbe: a zero-byte RDMA WRITE (no receive, no rkey needed: IBTA C9-88) sent on an idle link so
// that a dead peer fails it with IBV_WC_RETRY_EXC_ERR, like a TCP keepalive. A live peer's NIC
// ACKs it even when the process is busy or stopped, so it never turns a slow rank into a loss.
enum class WrKind : uint32_t {
  kDataSend = 1,
  kDataRecv = 2,
  kCreditSend = 3,
  kCreditRecv = 4,
  kProbe = 5
};

uint64_t wrId(WrKind kind, uint32_t slot) {
  return (static_cast<uint64_t>(kind) << 32) | static_cast<uint64_t>(slot);
}
WrKind wrKind(uint64_t id) { return static_cast<WrKind>(id >> 32); }
uint32_t wrSlot(uint64_t id) { return static_cast<uint32_t>(id & 0xffffffffu); }

const char* wrKindName(WrKind kind) {
  switch (kind) {
    case WrKind::kDataSend:
      return "data send";
    case WrKind::kDataRecv:
      return "data receive";
    case WrKind::kCreditSend:
      return "credit send";
    case WrKind::kCreditRecv:
      return "credit receive";
    case WrKind::kProbe:
      return "keepalive probe";
  }
  return "work request";
}

int pollTimeoutMs(int64_t now_ns, int64_t until_ns) {
  int64_t ms = (until_ns - now_ns + kNsPerMs - 1) / kNsPerMs;
  return static_cast<int>(std::clamp<int64_t>(ms, 0, kPollSliceMs));
}

std::string wcText(const ibv_wc& wc) {
  char vendor[32];
  std::snprintf(vendor, sizeof(vendor), "0x%x", wc.vendor_err);
  return std::string(wrKindName(wrKind(wc.wr_id))) + " completed with " +
         ibv_wc_status_str(wc.status) + " (wc status " + std::to_string(wc.status) +
         ", vendor error " + vendor + ")";
}

}  // namespace

// One side of the ring. Resources are created in the order cm id, PD, completion channel, CQ,
// buffer + MR, QP, and destroyed dependents first: QP, CQ, completion channel, MR and buffer, PD,
// cm id.
struct VerbsConn {
  enum class State { kResolvingAddr, kResolvingRoute, kConnecting, kAccepting, kEstablished };

  VerbsConn() = default;
  VerbsConn(const VerbsConn&) = delete;
  VerbsConn& operator=(const VerbsConn&) = delete;
  ~VerbsConn() {
    if (id != nullptr && id->qp != nullptr) rdma_destroy_qp(id);
    if (cq != nullptr) ibv_destroy_cq(cq);
    if (channel != nullptr) ibv_destroy_comp_channel(channel);
    if (mr != nullptr) ibv_dereg_mr(mr);
    std::free(buf);
    if (pd != nullptr) ibv_dealloc_pd(pd);
    if (id != nullptr) rdma_destroy_id(id);
  }

  std::string name;  // "connection to rank 2"
  State state = State::kResolvingAddr;
  int64_t started_ns = 0;
  rdma_cm_id* id = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  uint8_t* buf = nullptr;
  size_t slot_bytes = 0;
  uint32_t slots = 0;
  bool armed = false;  // a completion event was requested and has not come yet
  bool probe_outstanding = false;
  int64_t last_probe_ns = 0;
  // The CM reported the link gone (DISCONNECTED, DEVICE_REMOVAL, ...): the QP was moved to the
  // error state, and what had arrived before is still consumed, as TCP delivers data before EOF.
  std::string cm_event;
  int64_t gone_ns = 0;
  // The first failed completion: reported once nothing more can be done without this QP.
  bool failed = false;
  Status failure;
  LinkFailure failure_detail;
  size_t segment_bytes = 0;              // sender: min(ours, the receiver's slot size)
  std::optional<verbs::SendCredits> tx;  // to the next rank: data out, credits in
  std::optional<verbs::RecvStream> rx;   // from the previous rank: data in, credits out
};

struct VerbsRing::PendingRequest {
  rdma_cm_id* id = nullptr;
  verbs::Handshake hello;
  ~PendingRequest() {
    if (id != nullptr) {
      rdma_reject(id, nullptr, 0);
      rdma_destroy_id(id);
    }
  }
};

namespace {

Status postRecv(VerbsConn& c, WrKind kind, uint32_t slot) {
  ibv_sge sge{};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = wrId(kind, slot);
  if (kind == WrKind::kDataRecv) {
    sge.addr = reinterpret_cast<uintptr_t>(c.buf + slot * c.slot_bytes);
    sge.length = static_cast<uint32_t>(c.slot_bytes);
    sge.lkey = c.mr->lkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
  }
  const int rc = ibv_post_recv(c.id->qp, &wr, &bad);
  if (rc != 0) return core::errnoStatus(rc, c.name + ": ibv_post_recv");
  return Status::ok();
}

Status postSend(VerbsConn& c, WrKind kind, uint32_t slot, size_t bytes, uint32_t imm) {
  ibv_sge sge{};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = wrId(kind, slot);
  wr.send_flags = IBV_SEND_SIGNALED;
  if (kind == WrKind::kProbe) {
    wr.opcode = IBV_WR_RDMA_WRITE;  // zero bytes: no sg list, address or rkey
  } else if (kind == WrKind::kDataSend) {
    wr.opcode = IBV_WR_SEND;
    sge.addr = reinterpret_cast<uintptr_t>(c.buf + slot * c.slot_bytes);
    sge.length = static_cast<uint32_t>(bytes);
    sge.lkey = c.mr->lkey;
    wr.sg_list = &sge;
    wr.num_sge = 1;
  } else {
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(imm);
  }
  const int rc = ibv_post_send(c.id->qp, &wr, &bad);
  if (rc != 0) return core::errnoStatus(rc, c.name + ": ibv_post_send");
  return Status::ok();
}

// PD, completion channel, CQ, registered slots and the RC QP on the device the cm id is bound
// to, then the receives: data slots for the receiving side, zero-byte credit receives for the
// sending side. Everything is posted before the connection is accepted or requested, so the
// first message always finds a receive.
Status setupConn(VerbsConn& c, uint32_t slots, size_t slot_bytes, bool sender,
                 uint8_t ack_timeout) {
  ibv_context* ctx = c.id->verbs;
  if (ctx == nullptr) return Status(StatusCode::kInternal, c.name + ": cm id has no device");
  c.slots = slots;
  c.slot_bytes = slot_bytes;
  c.pd = ibv_alloc_pd(ctx);
  if (c.pd == nullptr) return core::errnoStatus(errno, c.name + ": ibv_alloc_pd");
  c.channel = ibv_create_comp_channel(ctx);
  if (c.channel == nullptr) return core::errnoStatus(errno, c.name + ": ibv_create_comp_channel");
  if (!setNonBlocking(c.channel->fd)) return core::errnoStatus(errno, c.name + ": fcntl");
  // Per QP at most `slots` sends (data, or credits) plus one probe, and `slots` receives.
  const int cqe = static_cast<int>(2 * (slots + 1));
  c.cq = ibv_create_cq(ctx, cqe, nullptr, c.channel, 0);
  if (c.cq == nullptr) return core::errnoStatus(errno, c.name + ": ibv_create_cq");
  const size_t bytes = static_cast<size_t>(slots) * slot_bytes;
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  c.buf = static_cast<uint8_t*>(std::aligned_alloc(4096, rounded));
  if (c.buf == nullptr) return core::errnoStatus(ENOMEM, c.name + ": buffer");
  std::memset(c.buf, 0, rounded);
  // An int, not the enumerator: verbs.h's ibv_reg_mr macro ORs it with another enum type, which
  // C++20 deprecates (clang's -Wdeprecated-enum-enum-conversion).
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;
  c.mr = ibv_reg_mr(c.pd, c.buf, bytes, kAccess);
  if (c.mr == nullptr) return core::errnoStatus(errno, c.name + ": ibv_reg_mr");

  ibv_qp_init_attr attr{};
  attr.send_cq = c.cq;
  attr.recv_cq = c.cq;
  attr.cap.max_send_wr = slots + 1;
  attr.cap.max_recv_wr = slots + 1;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 1;
  if (rdma_create_qp(c.id, c.pd, &attr) != 0) {
    return core::errnoStatus(errno, c.name + ": rdma_create_qp");
  }
  // Applied by rdma_cm when it moves the QP to RTS. Old kernels lack the option; they keep the
  // CM's default timeout, which only makes failure detection slower.
  uint8_t timeout = ack_timeout;
  rdma_set_option(c.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout));

  for (uint32_t i = 0; i < slots; ++i) {
    FC_RETURN_IF_ERROR(postRecv(c, sender ? WrKind::kCreditRecv : WrKind::kDataRecv, i));
  }
  if (sender) {
    c.tx.emplace(slots, 0);
  } else {
    c.rx.emplace(slots);
  }
  return Status::ok();
}

rdma_conn_param connParam(const std::vector<uint8_t>& private_data) {
  rdma_conn_param p{};
  p.private_data = private_data.data();
  p.private_data_len = static_cast<uint8_t>(private_data.size());
  p.responder_resources = 0;  // SEND/RECV only: no RDMA READ or atomics
  p.initiator_depth = 0;
  p.retry_count = verbs::kRetryCount;
  p.rnr_retry_count = verbs::kRnrRetryCount;
  return p;
}

void moveToError(VerbsConn& c) {
  if (c.id == nullptr || c.id->qp == nullptr) return;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(c.id->qp, &attr, IBV_QP_STATE);
}

}  // namespace

VerbsRing::VerbsRing(const VerbsRingOptions& options) : options_(options) {
  options_.slot_bytes = std::clamp(options_.slot_bytes, kMinSlotBytes, kMaxSlotBytes);
  options_.slots = std::clamp<uint32_t>(options_.slots, 1, kMaxSlots);
  ack_timeout_ = verbs::ackTimeoutExponent(options_.peer_timeout_ms);
}

VerbsRing::~VerbsRing() {
  disconnect();
  dropPending();
  destroyListener();
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

Result<std::unique_ptr<VerbsRing>> VerbsRing::listen(const VerbsRingOptions& options) {
  if (options.world < 2 || options.rank < 0 || options.rank >= options.world) {
    return Status(StatusCode::kInvalidArgument, "a verbs ring needs world >= 2 and rank < world");
  }
  auto next = resolveNumeric(options.next_addr, options.next_port);
  if (!next.isOk()) return next.status().withContext("--next");
  auto local = resolveNumeric(options.listen_addr, options.listen_port);
  if (!local.isOk()) return local.status().withContext("--listen");

  FC_RETURN_IF_ERROR(verbs::checkRdmaDevicePresent());
  std::unique_ptr<VerbsRing> ring(new VerbsRing(options));
  auto channel = verbs::createEventChannel();
  if (!channel.isOk()) return channel.status();
  ring->channel_ = *channel;
  FC_RETURN_IF_ERROR(ring->listenOnce());
  return ring;
}

Status VerbsRing::listenOnce() {
  // After a device removal the listener is re-created on the port it had, so that the previous
  // rank finds it where it was.
  const int port = listen_port_ != 0 ? listen_port_ : options_.listen_port;
  auto id = verbs::listenOn(channel_, options_.listen_addr, port, static_cast<int>(kMaxPending));
  if (!id.isOk()) return id.status();
  listen_id_ = *id;
  listen_port_ = ntohs(rdma_get_src_port(listen_id_));
  return Status::ok();
}

void VerbsRing::destroyListener() {
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  listen_id_ = nullptr;
}

void VerbsRing::dropPending() { pending_.clear(); }

bool VerbsRing::stopRequested() const {
  return options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed);
}

bool VerbsRing::connected() const {
  return next_ != nullptr && prev_ != nullptr && next_->state == VerbsConn::State::kEstablished &&
         prev_->state == VerbsConn::State::kEstablished;
}

void VerbsRing::disconnect() {
  // Like close() on a socket, let what we already sent arrive: the neighbour may still need our
  // last chunk. A SEND completes once the receiver has ACKed it.
  if (connected()) drainSends();
  for (auto* conn : {&next_, &prev_}) {
    if (*conn == nullptr) continue;
    // Moves our QP to the error state and sends a DREQ: the neighbour sees DISCONNECTED.
    if ((*conn)->state == VerbsConn::State::kEstablished) rdma_disconnect((*conn)->id);
    conn->reset();
  }
}

Status VerbsRing::fail(Status status, std::string reason, std::string wc_status,
                       std::string cm_event) {
  last_failure_.reason = std::move(reason);
  last_failure_.wc_status = std::move(wc_status);
  last_failure_.cm_event = std::move(cm_event);
  return status;
}

Result<uint32_t> VerbsRing::form(uint32_t epoch, int64_t deadline_ns) {
  disconnect();
  last_failure_ = LinkFailure{};
  auto next_addr = resolveNumeric(options_.next_addr, options_.next_port);
  if (!next_addr.isOk()) return next_addr.status();
  const int world = options_.world;
  const int prev_rank = (options_.rank - 1 + world) % world;
  const int next_rank = (options_.rank + 1) % world;
  // An attempt that is not established in this long is abandoned: the CM's own REQ retries take
  // minutes against a host that does not answer.
  const int64_t attempt_timeout_ns =
      std::clamp<int64_t>(options_.peer_timeout_ms, 1000, 10000) * kNsPerMs;
  uint32_t max_epoch = epoch;

  std::unique_ptr<VerbsConn> out;  // to the next rank
  std::unique_ptr<VerbsConn> in;   // from the previous rank
  int64_t next_attempt_ns = 0;
  int64_t next_listen_ns = 0;
  std::string out_error = "no attempt yet";
  std::string in_error = "nothing accepted yet";
  const std::string to_next = "connection to rank " + std::to_string(next_rank);
  const std::string from_prev = "connection from rank " + std::to_string(prev_rank);

  auto established = [](const std::unique_ptr<VerbsConn>& c) {
    return c != nullptr && c->state == VerbsConn::State::kEstablished;
  };
  auto fail_out = [&](const std::string& why, int64_t now) {
    out.reset();
    next_attempt_ns = now + kRetryNs;
    out_error = why;
  };
  // Accepts a valid request from our previous rank; a later request supersedes an earlier one,
  // as the previous rank keeps one attempt at a time.
  auto accept = [&](rdma_cm_id* id, const verbs::Handshake& hello, int64_t now) {
    in.reset();
    auto conn = std::make_unique<VerbsConn>();
    conn->name = from_prev;
    conn->id = id;
    conn->started_ns = now;
    conn->state = VerbsConn::State::kAccepting;
    Status setup = setupConn(*conn, options_.slots, options_.slot_bytes, false, ack_timeout_);
    if (setup.isOk()) {
      verbs::Handshake reply;
      reply.rank = static_cast<uint32_t>(options_.rank);
      reply.world = static_cast<uint32_t>(world);
      reply.epoch = epoch;
      reply.slots = options_.slots;
      reply.slot_bytes = static_cast<uint32_t>(options_.slot_bytes);
      const auto data = verbs::encodeHandshake(reply, true);
      rdma_conn_param param = connParam(data);
      if (rdma_accept(id, &param) != 0)
        setup = core::errnoStatus(errno, from_prev + ": rdma_accept");
    }
    if (!setup.isOk()) {
      rdma_reject(id, nullptr, 0);
      in_error = setup.message();
      return;  // conn's destructor frees the id
    }
    max_epoch = std::max(max_epoch, hello.epoch);
    in = std::move(conn);
  };
  // Validates a connection request; returns its hello when it is from our previous rank.
  auto check_request = [&](const CmEvent& e) -> std::optional<verbs::Handshake> {
    auto hello = verbs::decodeHandshake(e.private_data.data(), e.private_data.size(), false);
    if (hello && hello->rank == static_cast<uint32_t>(prev_rank) &&
        hello->world == static_cast<uint32_t>(world)) {
      return hello;
    }
    ++rejected_handshakes_;
    in_error = hello ? "rejected a request from rank " + std::to_string(hello->rank) +
                           " of world " + std::to_string(hello->world)
                     : "rejected a request without a valid handshake";
    rdma_reject(e.id, nullptr, 0);
    rdma_destroy_id(e.id);
    return std::nullopt;
  };

  // Requests that came while the ring was connected, oldest first: the last one stands.
  for (auto& p : pending_) {
    rdma_cm_id* id = std::exchange(p->id, nullptr);
    accept(id, p->hello, core::steadyNowNs());
  }
  pending_.clear();

  while (!established(out) || !established(in)) {
    if (stopRequested()) return Status(StatusCode::kAborted, "stop requested while forming ring");
    int64_t now = core::steadyNowNs();
    if (now >= deadline_ns) {
      std::string msg = "ring not formed in time: ";
      msg += established(out)
                 ? "connected to next rank " + std::to_string(next_rank)
                 : "connecting to next rank " + std::to_string(next_rank) + " at " +
                       hostPort(options_.next_addr, options_.next_port) + ": " + out_error;
      msg += established(in)
                 ? "; accepted previous rank " + std::to_string(prev_rank)
                 : "; waiting for previous rank " + std::to_string(prev_rank) + ": " + in_error;
      return Status(StatusCode::kTimeout, msg);
    }
    if (listen_id_ == nullptr && now >= next_listen_ns) {
      Status listening = listenOnce();
      if (!listening.isOk()) in_error = listening.message();
      next_listen_ns = now + kRetryNs;
    }
    if (out == nullptr && now >= next_attempt_ns) {
      out = std::make_unique<VerbsConn>();
      out->name = to_next;
      out->started_ns = now;
      out->state = VerbsConn::State::kResolvingAddr;
      uint8_t tos = static_cast<uint8_t>(options_.dscp << 2);
      if (rdma_create_id(channel_, &out->id, nullptr, RDMA_PS_TCP) != 0) {
        const int err = errno;
        out->id = nullptr;
        fail_out(std::string("rdma_create_id: ") + std::strerror(err), now);
      } else if (options_.dscp != 0 && rdma_set_option(out->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
                                                       &tos, sizeof(tos)) != 0) {
        // Taken by the route resolved next, as the traffic class of every packet it sends.
        fail_out(std::string("rdma_set_option TOS: ") + std::strerror(errno), now);
      } else if (rdma_resolve_addr(out->id, nullptr, reinterpret_cast<sockaddr*>(&next_addr->addr),
                                   kResolveTimeoutMs) != 0) {
        fail_out(std::string("rdma_resolve_addr: ") + std::strerror(errno), now);
      }
    }
    if (out != nullptr && !established(out) && now - out->started_ns > attempt_timeout_ns) {
      fail_out("no answer within " + std::to_string(attempt_timeout_ns / kNsPerMs) + " ms", now);
    }
    if (in != nullptr && !established(in) && now - in->started_ns > attempt_timeout_ns) {
      in.reset();
      in_error = "an accepted connection was never established";
    }

    // Also when a pending attempt times out: an attempt the peer never answers sends no CM event,
    // and sleeping to the deadline would let one lost handshake spend the whole budget.
    int64_t wake_ns = deadline_ns;
    if (out == nullptr) wake_ns = std::min(wake_ns, next_attempt_ns);
    for (const auto* pending : {&out, &in}) {
      if (*pending != nullptr && !established(*pending)) {
        wake_ns = std::min(wake_ns, (*pending)->started_ns + attempt_timeout_ns + kNsPerMs);
      }
    }
    pollfd pfd{channel_->fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, pollTimeoutMs(now, wake_ns));
    if (rc < 0 && errno != EINTR) return core::errnoStatus(errno, "poll");

    CmEvent e;
    while (true) {
      const int got = nextCmEvent(channel_, &e);
      if (got < 0) return core::errnoStatus(-got, "rdma_get_cm_event");
      if (got == 0) break;
      now = core::steadyNowNs();
      if (out != nullptr && e.id == out->id) {
        switch (e.type) {
          case RDMA_CM_EVENT_ADDR_RESOLVED:
            if (rdma_resolve_route(out->id, kResolveTimeoutMs) != 0) {
              fail_out(std::string("rdma_resolve_route: ") + std::strerror(errno), now);
            } else {
              out->state = VerbsConn::State::kResolvingRoute;
            }
            break;
          case RDMA_CM_EVENT_ROUTE_RESOLVED: {
            Status setup = setupConn(*out, options_.slots, options_.slot_bytes, true, ack_timeout_);
            if (!setup.isOk()) {
              fail_out(setup.message(), now);
              break;
            }
            verbs::Handshake hello;
            hello.rank = static_cast<uint32_t>(options_.rank);
            hello.world = static_cast<uint32_t>(world);
            hello.epoch = epoch;
            hello.slots = options_.slots;
            hello.slot_bytes = static_cast<uint32_t>(options_.slot_bytes);
            const auto data = verbs::encodeHandshake(hello, false);
            rdma_conn_param param = connParam(data);
            if (rdma_connect(out->id, &param) != 0) {
              fail_out(std::string("rdma_connect: ") + std::strerror(errno), now);
            } else {
              out->state = VerbsConn::State::kConnecting;
            }
            break;
          }
          case RDMA_CM_EVENT_ESTABLISHED: {
            auto reply = verbs::decodeHandshake(e.private_data.data(), e.private_data.size(), true);
            if (!reply || reply->rank != static_cast<uint32_t>(next_rank) ||
                reply->world != static_cast<uint32_t>(world)) {
              rdma_disconnect(out->id);
              fail_out("bad handshake reply", now);
              break;
            }
            out->segment_bytes = std::min<size_t>(out->slot_bytes, reply->slot_bytes);
            out->tx.emplace(out->slots, reply->slots);
            out->state = VerbsConn::State::kEstablished;
            max_epoch = std::max(max_epoch, reply->epoch);
            break;
          }
          case RDMA_CM_EVENT_ADDR_ERROR:
          case RDMA_CM_EVENT_ROUTE_ERROR:
          case RDMA_CM_EVENT_CONNECT_ERROR:
          case RDMA_CM_EVENT_UNREACHABLE:
          case RDMA_CM_EVENT_REJECTED:
          case RDMA_CM_EVENT_DISCONNECTED:
          case RDMA_CM_EVENT_DEVICE_REMOVAL:
          case RDMA_CM_EVENT_ADDR_CHANGE:
            fail_out(cmEventText(e), now);
            break;
          default:
            break;
        }
      } else if (in != nullptr && e.id == in->id) {
        switch (e.type) {
          case RDMA_CM_EVENT_ESTABLISHED:
            in->state = VerbsConn::State::kEstablished;
            break;
          case RDMA_CM_EVENT_CONNECT_ERROR:
          case RDMA_CM_EVENT_UNREACHABLE:
          case RDMA_CM_EVENT_REJECTED:
          case RDMA_CM_EVENT_DISCONNECTED:
          case RDMA_CM_EVENT_DEVICE_REMOVAL:
          case RDMA_CM_EVENT_ADDR_CHANGE:
            in.reset();
            in_error = from_prev + ": " + cmEventText(e);
            break;
          default:
            break;
        }
      } else if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        if (auto hello = check_request(e)) accept(e.id, *hello, now);
      } else if (e.id == listen_id_ && e.type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        destroyListener();
        in_error = "the listening device was removed";
      }
      // Anything else belongs to an id destroyed since: nothing to do.
    }
  }
  next_ = std::move(out);
  prev_ = std::move(in);
  return max_epoch;
}

void VerbsRing::markGone(VerbsConn& conn, const std::string& cm_event) {
  if (!conn.cm_event.empty()) return;
  // rdma_cm does not touch a user QP on DISCONNECTED: move it to the error state so that its
  // posted work requests flush behind whatever completed before.
  conn.cm_event = cm_event;
  conn.gone_ns = core::steadyNowNs();
  moveToError(conn);
}

Status VerbsRing::drainCmEventsConnected() {
  CmEvent e;
  while (true) {
    const int got = nextCmEvent(channel_, &e);
    if (got < 0) return fail(core::errnoStatus(-got, "rdma_get_cm_event"), "error");
    if (got == 0) return Status::ok();
    for (VerbsConn* conn : {next_.get(), prev_.get()}) {
      if (e.id != conn->id) continue;
      switch (e.type) {
        case RDMA_CM_EVENT_DISCONNECTED:
        case RDMA_CM_EVENT_DEVICE_REMOVAL:
        case RDMA_CM_EVENT_ADDR_CHANGE:
        case RDMA_CM_EVENT_CONNECT_ERROR:
        case RDMA_CM_EVENT_UNREACHABLE:
          markGone(*conn, rdma_event_str(e.type));
          break;
        default:
          break;
      }
    }
    if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      // The previous rank is re-forming (we will see our link to it fail soon): keep its request
      // for the next form(), which accepts the latest.
      auto hello = verbs::decodeHandshake(e.private_data.data(), e.private_data.size(), false);
      const int prev_rank = (options_.rank - 1 + options_.world) % options_.world;
      auto pending = std::make_unique<PendingRequest>();
      pending->id = e.id;
      if (!hello || hello->rank != static_cast<uint32_t>(prev_rank) ||
          hello->world != static_cast<uint32_t>(options_.world)) {
        ++rejected_handshakes_;
        continue;  // the destructor rejects it
      }
      pending->hello = *hello;
      if (pending_.size() >= kMaxPending) pending_.erase(pending_.begin());
      pending_.push_back(std::move(pending));
    } else if (e.id == listen_id_ && e.type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      destroyListener();  // form() listens again
    } else {
      for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if ((*it)->id == e.id) {
          pending_.erase(it);  // that attempt failed or was abandoned
          break;
        }
      }
    }
  }
}

Status VerbsRing::pollCompletions(VerbsConn& conn, bool* progress) {
  if (conn.failed) return Status::ok();
  ibv_wc wc[kCqBatch];
  while (true) {
    const int n = ibv_poll_cq(conn.cq, kCqBatch, wc);
    if (n < 0)
      return fail(Status(StatusCode::kInternal, conn.name + ": ibv_poll_cq failed"), "error");
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        // After a disconnect the flush is the peer closing (eof); otherwise the status says it.
        const bool closed = conn.cm_event == rdma_event_str(RDMA_CM_EVENT_DISCONNECTED);
        conn.failed = true;
        conn.failure = Status(
            StatusCode::kUnavailable,
            conn.name + ": " + (conn.cm_event.empty() ? "" : conn.cm_event + "; ") + wcText(wc[i]));
        conn.failure_detail.reason = closed && wc[i].status == IBV_WC_WR_FLUSH_ERR
                                         ? "eof"
                                         : verbs::reasonForWcStatus(wc[i].status);
        conn.failure_detail.wc_status = ibv_wc_status_str(wc[i].status);
        conn.failure_detail.cm_event = conn.cm_event;
        moveToError(conn);
        *progress = true;
        return Status::ok();
      }
      const uint32_t slot = wrSlot(wc[i].wr_id);
      switch (wrKind(wc[i].wr_id)) {
        case WrKind::kDataSend:
          conn.tx->sendCompleted();
          break;
        case WrKind::kCreditRecv:
          conn.tx->granted(ntohl(wc[i].imm_data));
          FC_RETURN_IF_ERROR(postRecv(conn, WrKind::kCreditRecv, slot));
          break;
        case WrKind::kDataRecv:
          conn.rx->arrived(slot, wc[i].byte_len);
          break;
        case WrKind::kCreditSend:
          conn.rx->creditSendCompleted();
          break;
        case WrKind::kProbe:
          conn.probe_outstanding = false;
          continue;  // the peer's NIC is alive; that is not progress of the collective
      }
      *progress = true;
    }
    if (n < kCqBatch) return Status::ok();
  }
}

Status VerbsRing::waitForEvents(int64_t timeout_ms) {
  pollfd fds[3] = {
      {next_->channel->fd, POLLIN, 0}, {prev_->channel->fd, POLLIN, 0}, {channel_->fd, POLLIN, 0}};
  const int rc = ::poll(fds, 3, static_cast<int>(timeout_ms));
  if (rc < 0) {
    if (errno == EINTR) return Status::ok();
    return fail(core::errnoStatus(errno, "poll"), "error");
  }
  VerbsConn* conns[2] = {next_.get(), prev_.get()};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].revents == 0) continue;
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    while (ibv_get_cq_event(conns[i]->channel, &cq, &context) == 0) {
      ibv_ack_cq_events(cq, 1);
      conns[i]->armed = false;
    }
  }
  if (fds[2].revents != 0) return drainCmEventsConnected();
  return Status::ok();
}

Status VerbsRing::linkFailure() {
  for (VerbsConn* conn : {next_.get(), prev_.get()}) {
    if (conn->failed) {
      return fail(conn->failure, conn->failure_detail.reason, conn->failure_detail.wc_status,
                  conn->failure_detail.cm_event);
    }
  }
  // Gone without a single flushed completion (every receive was in use): report the CM event.
  for (VerbsConn* conn : {next_.get(), prev_.get()}) {
    if (!conn->cm_event.empty() && core::steadyNowNs() - conn->gone_ns > kFlushWaitNs) {
      const bool closed = conn->cm_event == rdma_event_str(RDMA_CM_EVENT_DISCONNECTED);
      return fail(Status(StatusCode::kUnavailable, conn->name + ": " + conn->cm_event),
                  closed ? "eof" : "error", "", conn->cm_event);
    }
  }
  return Status::ok();
}

void VerbsRing::drainSends() {
  VerbsConn& c = *next_;
  const int64_t until =
      core::steadyNowNs() + std::min<int64_t>(options_.peer_timeout_ms, 1000) * kNsPerMs;
  int64_t next_cm_check_ns = 0;
  while (!c.failed && c.cm_event.empty() && c.tx->freeSlots() < c.slots) {
    const int64_t now = core::steadyNowNs();
    if (now >= until) return;
    if (now >= next_cm_check_ns) {
      drainCmEventsConnected();  // stops at the next rank's own DISCONNECTED
      next_cm_check_ns = now + kNsPerMs;
    }
    ibv_wc wc[kCqBatch];
    const int n = ibv_poll_cq(c.cq, kCqBatch, wc);
    if (n < 0) return;
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return;
      if (wrKind(wc[i].wr_id) == WrKind::kDataSend) c.tx->sendCompleted();
    }
    if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void VerbsRing::abortConnections() {
  for (VerbsConn* conn : {next_.get(), prev_.get()}) moveToError(*conn);
  // Hold the silent QPs until the neighbours' retries have run out, so that they see what a dead
  // host causes (IBV_WC_RETRY_EXC_ERR) rather than our DREQ.
  const auto hold_ns =
      static_cast<int64_t>(2 * verbs::retryBudgetMs(ack_timeout_) * kNsPerMs) + 200 * kNsPerMs;
  const int64_t until = core::steadyNowNs() + hold_ns;
  while (!stopRequested()) {
    const int64_t left = until - core::steadyNowNs();
    if (left <= 0) break;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(left, kPollSliceMs * kNsPerMs)));
  }
}

Status VerbsRing::sendRecv(const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  last_failure_ = LinkFailure{};
  if (!connected()) {
    return fail(Status(StatusCode::kFailedPrecondition, "ring is not formed"), "error");
  }
  VerbsConn& tx = *next_;
  VerbsConn& rx = *prev_;
  const auto* src = static_cast<const uint8_t*>(send);
  auto* dst = static_cast<uint8_t*>(recv);
  size_t posted = 0;
  size_t got = 0;
  const int64_t timeout_ns = options_.peer_timeout_ms * kNsPerMs;
  const int64_t busy_ns = options_.busy_poll_us * 1000;
  int64_t last_progress_ns = core::steadyNowNs();
  int64_t spin_until_ns = last_progress_ns + busy_ns;
  int64_t next_cm_check_ns = last_progress_ns + kPollSliceMs * kNsPerMs;
  // One ACK timeout (4.096 us * 2^t).
  const auto probe_interval_ns = static_cast<int64_t>(4096.0 * std::ldexp(1.0, ack_timeout_));
  std::vector<uint32_t> freed;

  while (true) {
    if (stopRequested()) return fail(Status(StatusCode::kAborted, "stop requested"), "aborted");
    if (options_.abort_connections != nullptr &&
        options_.abort_connections->load(std::memory_order_relaxed) &&
        options_.abort_connections->exchange(false)) {
      abortConnections();
      return fail(Status(StatusCode::kAborted, "ring connections aborted by the test hook"),
                  "aborted");
    }
    bool progress = false;
    FC_RETURN_IF_ERROR(pollCompletions(tx, &progress));
    FC_RETURN_IF_ERROR(pollCompletions(rx, &progress));

    if (got < recv_bytes) {
      freed.clear();
      const size_t n = rx.rx->consume(rx.buf, rx.slot_bytes, dst + got, recv_bytes - got, &freed);
      got += n;
      for (uint32_t slot : freed) {
        if (rx.failed) break;
        Status posted_recv = postRecv(rx, WrKind::kDataRecv, slot);
        if (!posted_recv.isOk()) return fail(posted_recv, "error");
      }
      rx.rx->reposted(static_cast<uint32_t>(freed.size()));
      if (n > 0) progress = true;
    }
    if (const uint32_t credits = rx.failed ? 0 : rx.rx->takeCreditsToSend(); credits > 0) {
      Status sent = postSend(rx, WrKind::kCreditSend, 0, 0, credits);
      if (!sent.isOk()) return fail(sent, "error");
    }
    while (posted < send_bytes && !tx.failed && tx.tx->canSend()) {
      const size_t len = std::min(tx.segment_bytes, send_bytes - posted);
      const uint32_t slot = tx.tx->take();
      std::memcpy(tx.buf + slot * tx.slot_bytes, src + posted, len);
      Status sent = postSend(tx, WrKind::kDataSend, slot, len, 0);
      if (!sent.isOk()) return fail(sent, "error");
      posted += len;
      progress = true;
    }
    if (posted == send_bytes && got == recv_bytes) return Status::ok();
    FC_RETURN_IF_ERROR(linkFailure());

    const int64_t now = core::steadyNowNs();
    if (now >= next_cm_check_ns) {
      // A busy link must still notice its other side being disconnected.
      FC_RETURN_IF_ERROR(drainCmEventsConnected());
      next_cm_check_ns = now + kPollSliceMs * kNsPerMs;
    }
    if (progress) {
      last_progress_ns = now;
      spin_until_ns = now + busy_ns;
      continue;
    }
    if (now - last_progress_ns >= timeout_ns) {
      const std::string waiting =
          got < recv_bytes ? "waiting on " + rx.name : "waiting on " + tx.name + " for credits";
      return fail(Status(StatusCode::kTimeout, "nothing completed for " +
                                                   std::to_string(options_.peer_timeout_ms) +
                                                   " ms (" + waiting + ")"),
                  "timeout");
    }
    // Idle for an ACK timeout: probe both links, so that a dead peer surfaces as a completion
    // error within the transport's retry budget even when we are not sending to it.
    if (now - last_progress_ns >= probe_interval_ns) {
      for (VerbsConn* conn : {&tx, &rx}) {
        if (conn->failed || !conn->cm_event.empty() || conn->probe_outstanding ||
            now - conn->last_probe_ns < probe_interval_ns) {
          continue;
        }
        Status probed = postSend(*conn, WrKind::kProbe, 0, 0, 0);
        if (!probed.isOk()) return fail(probed, "error");
        conn->probe_outstanding = true;
        conn->last_probe_ns = now;
      }
    }
    if (now < spin_until_ns) continue;
    // Arm both CQs, then look once more: a completion that landed before arming raises no event.
    if (!tx.armed || !rx.armed) {
      for (VerbsConn* conn : {&tx, &rx}) {
        if (conn->armed) continue;
        if (ibv_req_notify_cq(conn->cq, 0) != 0) {
          return fail(Status(StatusCode::kInternal, conn->name + ": ibv_req_notify_cq failed"),
                      "error");
        }
        conn->armed = true;
      }
      continue;
    }
    // A link the CM reported gone should flush at once; look again soon rather than sleep.
    const bool gone = !tx.cm_event.empty() || !rx.cm_event.empty();
    FC_RETURN_IF_ERROR(waitForEvents(std::min<int64_t>(
        gone ? 5 : kPollSliceMs, pollTimeoutMs(now, last_progress_ns + timeout_ns))));
  }
}

}  // namespace fabric_chaos::workload
