#include "workload/sys/verbs_traffic.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "workload/sys/byte_order.h"
#include "workload/sys/endpoint.h"
#include "workload/sys/verbs_cm.h"

namespace fabric_chaos::workload {

using core::Result;
using core::Status;
using core::StatusCode;

namespace verbs {
namespace {

constexpr char kRequestMagic[4] = {'F', 'C', 'T', '1'};
constexpr char kReplyMagic[4] = {'F', 'C', 'S', '1'};

}  // namespace

std::vector<uint8_t> encodeTrafficRequest(const TrafficRequest& r) {
  std::vector<uint8_t> out(kTrafficRequestBytes);
  std::memcpy(out.data(), kRequestMagic, 4);
  putU32(out.data() + 4, r.message_bytes);
  putU32(out.data() + 8, r.depth);
  return out;
}

std::vector<uint8_t> encodeTrafficReply(const TrafficReply& r) {
  std::vector<uint8_t> out(kTrafficReplyBytes);
  std::memcpy(out.data(), kReplyMagic, 4);
  putU32(out.data() + 4, static_cast<uint32_t>(r.addr >> 32));
  putU32(out.data() + 8, static_cast<uint32_t>(r.addr & 0xffffffffu));
  putU32(out.data() + 12, r.rkey);
  putU32(out.data() + 16, r.receives);
  return out;
}

std::optional<TrafficRequest> decodeTrafficRequest(const uint8_t* data, size_t len,
                                                   uint32_t max_message_bytes) {
  if (data == nullptr || len < kTrafficRequestBytes) return std::nullopt;
  if (std::memcmp(data, kRequestMagic, 4) != 0) return std::nullopt;
  TrafficRequest r;
  r.message_bytes = getU32(data + 4);
  r.depth = getU32(data + 8);
  if (r.message_bytes < 1 || r.message_bytes > max_message_bytes) return std::nullopt;
  if (r.depth < 1 || r.depth > kMaxTrafficDepth) return std::nullopt;
  return r;
}

std::optional<TrafficReply> decodeTrafficReply(const uint8_t* data, size_t len) {
  if (data == nullptr || len < kTrafficReplyBytes) return std::nullopt;
  if (std::memcmp(data, kReplyMagic, 4) != 0) return std::nullopt;
  TrafficReply r;
  r.addr = (static_cast<uint64_t>(getU32(data + 4)) << 32) | getU32(data + 8);
  r.rkey = getU32(data + 12);
  r.receives = getU32(data + 16);
  if (r.receives == 0) return std::nullopt;
  return r;
}

uint32_t sourceWindow(uint32_t depth, uint32_t sink_receives) {
  return std::min(depth, sink_receives);
}

}  // namespace verbs

namespace {

constexpr int kResolveTimeoutMs = 2000;
constexpr int kListenBacklog = 64;
constexpr int kCqBatch = 32;
// 4.096 us * 2^14 = 67 ms per ACK timeout (the shortest rxe under TCG answers within; see
// verbs_ring.h), 7 tries: a sink that vanished fails the flow in about 0.5 s. A drop at a congested
// port costs the aggressor one timeout before go-back-N resends, so a longer timeout would make it
// back off on its own and leave the port half idle (at 268 ms, 8 QPs kept 12 of 40 Mbit/s busy).
constexpr uint8_t kAckTimeoutExponent = 14;
constexpr uint8_t kRetryCount = 6;       // 7 is "forever" on rxe (see verbs_ring.h)
constexpr uint8_t kRnrRetryForever = 7;  // IBTA: 7 = retry RNR NAKs without limit

using verbs::CmEvent;
using verbs::cmEventText;
using verbs::nextCmEvent;

std::string peerOf(rdma_cm_id* id) {
  const sockaddr* sa = rdma_get_peer_addr(id);
  if (sa == nullptr) return "?";
  char text[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

std::string wcText(const ibv_wc& wc) {
  return std::string(ibv_wc_status_str(wc.status)) + " (wc status " + std::to_string(wc.status) +
         ")";
}

rdma_conn_param connParam(const std::vector<uint8_t>& private_data) {
  rdma_conn_param p{};
  p.private_data = private_data.data();
  p.private_data_len = static_cast<uint8_t>(private_data.size());
  p.responder_resources = 0;  // WRITEs only: no RDMA READ or atomics
  p.initiator_depth = 0;
  p.retry_count = kRetryCount;
  p.rnr_retry_count = kRnrRetryForever;
  return p;
}

}  // namespace

// One flow's QP and what it needs, created in the order cm id, PD, completion channel, CQ, buffer
// + MR, QP, and destroyed dependents first.
struct VerbsFlow {
  enum class State { kResolvingAddr, kResolvingRoute, kConnecting, kAccepting, kEstablished };

  VerbsFlow() = default;
  VerbsFlow(const VerbsFlow&) = delete;
  VerbsFlow& operator=(const VerbsFlow&) = delete;
  ~VerbsFlow() {
    if (id != nullptr && state == State::kEstablished) rdma_disconnect(id);
    if (id != nullptr && id->qp != nullptr) rdma_destroy_qp(id);
    if (cq != nullptr) {
      if (unacked_events > 0) ibv_ack_cq_events(cq, unacked_events);
      ibv_destroy_cq(cq);
    }
    if (channel != nullptr) ibv_destroy_comp_channel(channel);
    if (mr != nullptr) ibv_dereg_mr(mr);
    std::free(buf);
    if (pd != nullptr) ibv_dealloc_pd(pd);
    if (id != nullptr) rdma_destroy_id(id);
  }

  int index = 0;
  State state = State::kResolvingAddr;
  rdma_cm_id* id = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  uint8_t* buf = nullptr;
  unsigned int unacked_events = 0;
  bool armed = false;
  // Source: in flight, the window, and where to write.
  uint32_t outstanding = 0;
  uint32_t window = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  // Sink.
  uint32_t receives = 0;
  std::string peer;
};

namespace {

// PD, completion channel, CQ, a buffer of `bytes` registered with `access`, and the RC QP.
Status setupFlow(VerbsFlow& f, uint32_t bytes, int access, uint32_t send_wr, uint32_t recv_wr) {
  ibv_context* ctx = f.id->verbs;
  if (ctx == nullptr) return Status(StatusCode::kInternal, "cm id has no device");
  f.pd = ibv_alloc_pd(ctx);
  if (f.pd == nullptr) return core::errnoStatus(errno, "ibv_alloc_pd");
  f.channel = ibv_create_comp_channel(ctx);
  if (f.channel == nullptr) return core::errnoStatus(errno, "ibv_create_comp_channel");
  if (!verbs::setNonBlocking(f.channel->fd)) return core::errnoStatus(errno, "fcntl");
  f.cq = ibv_create_cq(ctx, static_cast<int>(send_wr + recv_wr + 1), nullptr, f.channel, 0);
  if (f.cq == nullptr) return core::errnoStatus(errno, "ibv_create_cq");
  const size_t rounded = (static_cast<size_t>(bytes) + 4095) / 4096 * 4096;
  f.buf = static_cast<uint8_t*>(std::aligned_alloc(4096, rounded));
  if (f.buf == nullptr) return core::errnoStatus(ENOMEM, "buffer");
  std::memset(f.buf, 0x5a, rounded);
  f.mr = ibv_reg_mr(f.pd, f.buf, bytes, access);
  if (f.mr == nullptr) return core::errnoStatus(errno, "ibv_reg_mr");
  ibv_qp_init_attr attr{};
  attr.send_cq = f.cq;
  attr.recv_cq = f.cq;
  attr.cap.max_send_wr = send_wr;
  attr.cap.max_recv_wr = recv_wr;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  attr.qp_type = IBV_QPT_RC;
  if (rdma_create_qp(f.id, f.pd, &attr) != 0) return core::errnoStatus(errno, "rdma_create_qp");
  uint8_t timeout = kAckTimeoutExponent;
  rdma_set_option(f.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout));
  return Status::ok();
}

// A zero-length receive: a WRITE WITH IMMEDIATE consumes one and places nothing in it.
Status postReceive(VerbsFlow& f) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(f.id->qp, &wr, &bad);
  if (rc != 0) return core::errnoStatus(rc, "ibv_post_recv");
  return Status::ok();
}

// Takes the completion events that woke us (the channel is non-blocking) and acknowledges them
// in batches; the CQ must be armed again before the next sleep.
void takeCqEvents(VerbsFlow& f) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  while (ibv_get_cq_event(f.channel, &cq, &context) == 0) {
    ++f.unacked_events;
    f.armed = false;
  }
  if (f.unacked_events >= 64) {
    ibv_ack_cq_events(f.cq, f.unacked_events);
    f.unacked_events = 0;
  }
}

// Sleeps in ppoll on the CM channel and the armed flows' completion channels, arming every CQ
// that is not armed first. The caller polls every CQ after it returns.
Status sleepOnChannels(rdma_event_channel* cm, std::vector<std::unique_ptr<VerbsFlow>>& flows,
                       int64_t timeout_ns, const sigset_t* mask) {
  bool armed_now = false;
  for (auto& f : flows) {
    if (f == nullptr || f->cq == nullptr || f->armed) continue;
    if (ibv_req_notify_cq(f->cq, 0) != 0) continue;  // not armed: polled again next time
    f->armed = true;
    armed_now = true;
  }
  // A completion that arrived before the arming raises no event: when a CQ was armed just now,
  // do not sleep, and let the caller's next poll find it.
  if (armed_now) timeout_ns = 0;
  std::vector<pollfd> fds;
  fds.push_back({cm->fd, POLLIN, 0});
  std::vector<VerbsFlow*> owners{nullptr};
  for (auto& f : flows) {
    if (f == nullptr || f->channel == nullptr || !f->armed) continue;
    fds.push_back({f->channel->fd, POLLIN, 0});
    owners.push_back(f.get());
  }
  timespec ts{};
  const int64_t ns = std::max<int64_t>(timeout_ns, 0);
  ts.tv_sec = ns / 1'000'000'000;
  ts.tv_nsec = ns % 1'000'000'000;
  const int rc = ::ppoll(fds.data(), fds.size(), &ts, mask);
  if (rc < 0 && errno != EINTR) return core::errnoStatus(errno, "ppoll");
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) takeCqEvents(*owners[i]);
  }
  return Status::ok();
}

}  // namespace

// ---- sink ----------------------------------------------------------------------------------

Result<std::unique_ptr<VerbsTrafficSink>> VerbsTrafficSink::listen(const std::string& addr,
                                                                   int port,
                                                                   uint32_t max_message_bytes) {
  auto where = resolveNumeric(addr, port);
  if (!where.isOk()) return where.status().withContext("--listen");
  FC_RETURN_IF_ERROR(verbs::checkRdmaDevicePresent());
  std::unique_ptr<VerbsTrafficSink> sink(new VerbsTrafficSink(max_message_bytes));
  auto channel = verbs::createEventChannel();
  if (!channel.isOk()) return channel.status();
  sink->channel_ = *channel;
  auto id = verbs::listenOn(sink->channel_, addr, port, kListenBacklog);
  if (!id.isOk()) return id.status();
  sink->listen_id_ = *id;
  return sink;
}

VerbsTrafficSink::VerbsTrafficSink(uint32_t max_message_bytes)
    : max_message_bytes_(max_message_bytes) {}

VerbsTrafficSink::~VerbsTrafficSink() {
  flows_.clear();
  if (listen_id_ != nullptr) rdma_destroy_id(listen_id_);
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

void VerbsTrafficSink::accept(rdma_cm_id* id, const std::vector<uint8_t>& request,
                              std::vector<VerbsTrafficEvent>* out) {
  auto hello = verbs::decodeTrafficRequest(request.data(), request.size(), max_message_bytes_);
  if (!hello) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    out->push_back({VerbsTrafficEvent::Kind::kClosed, -1, 0,
                    "rejected a connection request without a valid traffic handshake"});
    return;
  }
  auto flow = std::make_unique<VerbsFlow>();
  flow->id = id;
  flow->index = next_flow_++;
  flow->state = VerbsFlow::State::kAccepting;
  flow->peer = peerOf(id);
  flow->receives = 2 * hello->depth;
  Status setup = setupFlow(*flow, hello->message_bytes,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 1, flow->receives);
  for (uint32_t i = 0; setup.isOk() && i < flow->receives; ++i) setup = postReceive(*flow);
  if (setup.isOk()) {
    verbs::TrafficReply reply;
    reply.addr = reinterpret_cast<uintptr_t>(flow->buf);
    reply.rkey = flow->mr->rkey;
    reply.receives = flow->receives;
    const auto data = verbs::encodeTrafficReply(reply);
    rdma_conn_param param = connParam(data);
    if (rdma_accept(id, &param) != 0) setup = core::errnoStatus(errno, "rdma_accept");
  }
  if (!setup.isOk()) {
    rdma_reject(id, nullptr, 0);
    out->push_back({VerbsTrafficEvent::Kind::kClosed, flow->index, 0,
                    "could not accept " + flow->peer + ": " + setup.message()});
    return;  // the flow's destructor frees the id
  }
  flows_.push_back(std::move(flow));
}

namespace {

// Polls the flow's CQ dry: the bytes that WRITE WITH IMMEDIATE completions carried, and the first
// failure. With `repost`, every consumed receive is posted again.
std::string pollSinkCompletions(VerbsFlow& f, bool repost, int64_t* bytes) {
  ibv_wc wcs[kCqBatch];
  for (;;) {
    const int n = ibv_poll_cq(f.cq, kCqBatch, wcs);
    if (n < 0) return "ibv_poll_cq failed";
    for (int k = 0; k < n; ++k) {
      if (wcs[k].status != IBV_WC_SUCCESS) return "receive completed with " + wcText(wcs[k]);
      if (wcs[k].opcode == IBV_WC_RECV_RDMA_WITH_IMM) *bytes += ntohl(wcs[k].imm_data);
      if (!repost) continue;
      if (Status s = postReceive(f); !s.isOk()) return s.message();
    }
    if (n < kCqBatch) return "";
  }
}

}  // namespace

void VerbsTrafficSink::close(size_t index, const std::string& why,
                             std::vector<VerbsTrafficEvent>* out) {
  // What arrived before the disconnection is counted before the CQ goes: a source that stops
  // right after its last write has had it acknowledged, so its sink must report it.
  VerbsFlow& f = *flows_[index];
  int64_t bytes = 0;
  if (f.cq != nullptr) pollSinkCompletions(f, false, &bytes);  // flushed receives end it
  if (bytes > 0) out->push_back({VerbsTrafficEvent::Kind::kBytes, f.index, bytes, ""});
  out->push_back({VerbsTrafficEvent::Kind::kClosed, f.index, 0, why});
  flows_.erase(flows_.begin() + static_cast<std::ptrdiff_t>(index));
}

Status VerbsTrafficSink::wait(int64_t timeout_ns, const sigset_t* mask,
                              std::vector<VerbsTrafficEvent>* out) {
  const size_t before = out->size();
  auto handle = [&]() -> Status {
    CmEvent e;
    for (;;) {
      const int got = nextCmEvent(channel_, &e);
      if (got < 0) return core::errnoStatus(-got, "rdma_get_cm_event");
      if (got == 0) break;
      if (e.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
        accept(e.id, e.private_data, out);
        continue;
      }
      auto it =
          std::find_if(flows_.begin(), flows_.end(), [&](const auto& f) { return f->id == e.id; });
      if (it == flows_.end()) continue;
      VerbsFlow& f = **it;
      if (e.type == RDMA_CM_EVENT_ESTABLISHED) {
        f.state = VerbsFlow::State::kEstablished;
        out->push_back({VerbsTrafficEvent::Kind::kOpened, f.index, 0, f.peer});
      } else if (e.type == RDMA_CM_EVENT_DISCONNECTED || e.type == RDMA_CM_EVENT_REJECTED ||
                 e.type == RDMA_CM_EVENT_CONNECT_ERROR || e.type == RDMA_CM_EVENT_UNREACHABLE ||
                 e.type == RDMA_CM_EVENT_DEVICE_REMOVAL || e.type == RDMA_CM_EVENT_ADDR_CHANGE) {
        if (e.type == RDMA_CM_EVENT_DISCONNECTED) f.state = VerbsFlow::State::kAccepting;
        close(static_cast<size_t>(it - flows_.begin()), cmEventText(e), out);
      }
    }
    for (size_t i = 0; i < flows_.size();) {
      VerbsFlow& f = *flows_[i];
      int64_t bytes = 0;
      const std::string failure = pollSinkCompletions(f, true, &bytes);
      if (bytes > 0) out->push_back({VerbsTrafficEvent::Kind::kBytes, f.index, bytes, ""});
      if (!failure.empty()) {
        close(i, failure, out);
        continue;
      }
      ++i;
    }
    return Status::ok();
  };
  FC_RETURN_IF_ERROR(handle());
  if (out->size() > before) return Status::ok();
  FC_RETURN_IF_ERROR(sleepOnChannels(channel_, flows_, timeout_ns, mask));
  return handle();
}

// ---- source --------------------------------------------------------------------------------

VerbsTrafficSource::VerbsTrafficSource(const VerbsSourceOptions& o)
    : options_(o), flows_(static_cast<size_t>(o.flows)) {}

Result<std::unique_ptr<VerbsTrafficSource>> VerbsTrafficSource::create(
    const VerbsSourceOptions& o) {
  auto where = resolveNumeric(o.addr, o.port);
  if (!where.isOk()) return where.status().withContext("--connect");
  if (o.flows < 1) return Status(StatusCode::kInvalidArgument, "--flows must be at least 1");
  if (o.depth < 1 || o.depth > verbs::kMaxTrafficDepth) {
    return Status(StatusCode::kInvalidArgument,
                  "--depth must be in 1.." + std::to_string(verbs::kMaxTrafficDepth));
  }
  if (o.message_bytes < 1) return Status(StatusCode::kInvalidArgument, "--message-bytes");
  FC_RETURN_IF_ERROR(verbs::checkRdmaDevicePresent());
  std::unique_ptr<VerbsTrafficSource> source(new VerbsTrafficSource(o));
  auto channel = verbs::createEventChannel();
  if (!channel.isOk()) return channel.status();
  source->channel_ = *channel;
  return source;
}

VerbsTrafficSource::~VerbsTrafficSource() {
  flows_.clear();
  if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
}

bool VerbsTrafficSource::idle(int flow) const {
  return flows_[static_cast<size_t>(flow)] == nullptr;
}

bool VerbsTrafficSource::established(int flow) const {
  const auto& f = flows_[static_cast<size_t>(flow)];
  return f != nullptr && f->state == VerbsFlow::State::kEstablished;
}

uint32_t VerbsTrafficSource::room(int flow) const {
  if (!established(flow)) return 0;
  const auto& f = flows_[static_cast<size_t>(flow)];
  return f->window > f->outstanding ? f->window - f->outstanding : 0;
}

void VerbsTrafficSource::reset(int flow) { flows_[static_cast<size_t>(flow)].reset(); }

Status VerbsTrafficSource::connect(int flow) {
  auto& slot = flows_[static_cast<size_t>(flow)];
  if (slot != nullptr) return Status(StatusCode::kFailedPrecondition, "flow is not idle");
  auto where = resolveNumeric(options_.addr, options_.port);
  if (!where.isOk()) return where.status();
  auto f = std::make_unique<VerbsFlow>();
  f->index = flow;
  if (rdma_create_id(channel_, &f->id, nullptr, RDMA_PS_TCP) != 0) {
    f->id = nullptr;
    return core::errnoStatus(errno, "rdma_create_id");
  }
  // The traffic class of every packet of the connection (RoCEv2: the IP header's DSCP and ECN
  // bits), taken by the route resolved next.
  uint8_t tos = static_cast<uint8_t>(options_.dscp << 2);
  if (rdma_set_option(f->id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)) != 0) {
    return core::errnoStatus(errno, "rdma_set_option TOS");
  }
  if (rdma_resolve_addr(f->id, nullptr, reinterpret_cast<sockaddr*>(&where->addr),
                        kResolveTimeoutMs) != 0) {
    return core::errnoStatus(errno, "rdma_resolve_addr " + hostPort(options_.addr, options_.port));
  }
  f->state = VerbsFlow::State::kResolvingAddr;
  slot = std::move(f);
  return Status::ok();
}

void VerbsTrafficSource::fail(int flow, const std::string& why,
                              std::vector<VerbsTrafficEvent>* out) {
  flows_[static_cast<size_t>(flow)].reset();
  out->push_back({VerbsTrafficEvent::Kind::kFailed, flow, 0, why});
}

void VerbsTrafficSource::post(int flow, uint32_t bytes, std::vector<VerbsTrafficEvent>* out) {
  VerbsFlow& f = *flows_[static_cast<size_t>(flow)];
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uintptr_t>(f.buf);
  sge.length = std::min(bytes, options_.message_bytes);
  sge.lkey = f.mr->lkey;
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = sge.length;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(sge.length);
  wr.wr.rdma.remote_addr = f.remote_addr;
  wr.wr.rdma.rkey = f.rkey;
  const int rc = ibv_post_send(f.id->qp, &wr, &bad);
  if (rc != 0) {
    fail(flow, "ibv_post_send: " + std::string(std::strerror(rc)), out);
    return;
  }
  ++f.outstanding;
}

Status VerbsTrafficSource::wait(int64_t timeout_ns, const sigset_t* mask,
                                std::vector<VerbsTrafficEvent>* out) {
  const size_t before = out->size();
  auto handle = [&]() -> Status {
    CmEvent e;
    for (;;) {
      const int got = nextCmEvent(channel_, &e);
      if (got < 0) return core::errnoStatus(-got, "rdma_get_cm_event");
      if (got == 0) break;
      int flow = -1;
      for (size_t i = 0; i < flows_.size(); ++i) {
        if (flows_[i] != nullptr && flows_[i]->id == e.id) flow = static_cast<int>(i);
      }
      if (flow < 0) continue;
      VerbsFlow& f = *flows_[static_cast<size_t>(flow)];
      switch (e.type) {
        case RDMA_CM_EVENT_ADDR_RESOLVED:
          if (rdma_resolve_route(f.id, kResolveTimeoutMs) != 0) {
            fail(flow, std::string("rdma_resolve_route: ") + std::strerror(errno), out);
          } else {
            f.state = VerbsFlow::State::kResolvingRoute;
          }
          break;
        case RDMA_CM_EVENT_ROUTE_RESOLVED: {
          Status setup =
              setupFlow(f, options_.message_bytes, IBV_ACCESS_LOCAL_WRITE, options_.depth, 1);
          if (setup.isOk()) {
            const auto data = verbs::encodeTrafficRequest({options_.message_bytes, options_.depth});
            rdma_conn_param param = connParam(data);
            if (rdma_connect(f.id, &param) != 0) {
              setup = core::errnoStatus(errno, "rdma_connect");
            }
          }
          if (!setup.isOk()) {
            fail(flow, setup.message(), out);
          } else {
            f.state = VerbsFlow::State::kConnecting;
          }
          break;
        }
        case RDMA_CM_EVENT_ESTABLISHED: {
          auto reply = verbs::decodeTrafficReply(e.private_data.data(), e.private_data.size());
          if (!reply) {
            fail(flow, "the sink's reply is not a traffic handshake", out);
            break;
          }
          f.remote_addr = reply->addr;
          f.rkey = reply->rkey;
          f.window = verbs::sourceWindow(options_.depth, reply->receives);
          f.state = VerbsFlow::State::kEstablished;
          out->push_back({VerbsTrafficEvent::Kind::kConnected, flow, 0, ""});
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
          if (e.type == RDMA_CM_EVENT_DISCONNECTED) f.state = VerbsFlow::State::kConnecting;
          fail(flow, cmEventText(e), out);
          break;
        default:
          break;
      }
    }
    for (size_t i = 0; i < flows_.size(); ++i) {
      if (flows_[i] == nullptr || flows_[i]->cq == nullptr) continue;
      VerbsFlow& f = *flows_[i];
      ibv_wc wcs[kCqBatch];
      std::string failure;
      int64_t bytes = 0;
      for (;;) {
        const int n = ibv_poll_cq(f.cq, kCqBatch, wcs);
        if (n < 0) {
          failure = "ibv_poll_cq failed";
          break;
        }
        for (int k = 0; k < n; ++k) {
          if (f.outstanding > 0) --f.outstanding;
          if (wcs[k].status != IBV_WC_SUCCESS) {
            if (failure.empty()) failure = "write completed with " + wcText(wcs[k]);
            continue;
          }
          bytes += static_cast<int64_t>(wcs[k].wr_id);
        }
        if (n < kCqBatch) break;
      }
      if (bytes > 0) {
        out->push_back({VerbsTrafficEvent::Kind::kBytes, static_cast<int>(i), bytes, ""});
      }
      if (!failure.empty()) fail(static_cast<int>(i), failure, out);
    }
    return Status::ok();
  };
  FC_RETURN_IF_ERROR(handle());
  if (out->size() > before) return Status::ok();
  FC_RETURN_IF_ERROR(sleepOnChannels(channel_, flows_, timeout_ns, mask));
  return handle();
}

}  // namespace fabric_chaos::workload
