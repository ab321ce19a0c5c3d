#include "injectors/sys/qdisc_raw.h"

#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "injectors/sys/netlink_status.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace fabric_chaos::sys::raw {
namespace {

struct MsgDeleter {
  void operator()(nl_msg* msg) const { nlmsg_free(msg); }
};
using MsgPtr = std::unique_ptr<nl_msg, MsgDeleter>;

struct CbDeleter {
  void operator()(nl_cb* cb) const { nl_cb_put(cb); }
};
using CbPtr = std::unique_ptr<nl_cb, CbDeleter>;

// What the receive loop learned: the ack or the end of a dump, the kernel's errno and extack text,
// and the objects of a dump.
struct Exchange {
  bool done = false;
  int error = 0;  // negative errno from NLMSG_ERROR
  std::string extack;
  std::vector<TcObject>* objects = nullptr;
  bool parse_failed = false;
};

// The extended-ack TLVs follow the echoed request (only its header when NETLINK_CAP_ACK is on).
std::string extackMessage(const nlmsgerr* err) {
  const auto* outer =
      reinterpret_cast<const nlmsghdr*>(reinterpret_cast<const char*>(err) - NLMSG_HDRLEN);
  if (!(outer->nlmsg_flags & NLM_F_ACK_TLVS)) return "";
  size_t payload = sizeof(nlmsgerr);
  if (!(outer->nlmsg_flags & NLM_F_CAPPED)) {
    payload = sizeof(int) + err->msg.nlmsg_len;
  }
  const size_t total = outer->nlmsg_len - NLMSG_HDRLEN;
  size_t offset = NLMSG_ALIGN(payload);
  const char* base = reinterpret_cast<const char*>(err);
  while (offset + NLA_HDRLEN <= total) {
    const auto* attr = reinterpret_cast<const nlattr*>(base + offset);
    if (attr->nla_len < NLA_HDRLEN || offset + attr->nla_len > total) break;
    if ((attr->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
      const char* text = base + offset + NLA_HDRLEN;
      size_t len = strnlen(text, attr->nla_len - NLA_HDRLEN);
      return std::string(text, len);
    }
    offset += NLA_ALIGN(attr->nla_len);
  }
  return "";
}

int onError(sockaddr_nl* /*who*/, nlmsgerr* err, void* arg) {
  auto* exchange = static_cast<Exchange*>(arg);
  exchange->error = err->error;
  exchange->extack = extackMessage(err);
  exchange->done = true;
  return NL_STOP;
}

int onAck(nl_msg* /*msg*/, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

int onFinish(nl_msg* /*msg*/, void* arg) {
  static_cast<Exchange*>(arg)->done = true;
  return NL_STOP;
}

int onObject(nl_msg* msg, void* arg) {
  auto* exchange = static_cast<Exchange*>(arg);
  nlmsghdr* hdr = nlmsg_hdr(msg);
  if (hdr->nlmsg_type != RTM_NEWQDISC && hdr->nlmsg_type != RTM_NEWTCLASS &&
      hdr->nlmsg_type != RTM_NEWTFILTER) {
    return NL_SKIP;
  }
  if (hdr->nlmsg_len < NLMSG_LENGTH(sizeof(tcmsg))) {
    exchange->parse_failed = true;
    return NL_SKIP;
  }
  const auto* tcm = static_cast<const tcmsg*>(nlmsg_data(hdr));
  TcObject object;
  object.ifindex = tcm->tcm_ifindex;
  object.handle = tcm->tcm_handle;
  object.parent = tcm->tcm_parent;
  nlattr* attr = nullptr;
  int rem = 0;
  nlmsg_for_each_attr(attr, hdr, sizeof(tcmsg), rem) {
    const auto type = static_cast<uint16_t>(nla_type(attr));
    const auto* data = static_cast<const uint8_t*>(nla_data(attr));
    const int len = nla_len(attr);
    if (type == TCA_KIND) {
      object.kind.assign(reinterpret_cast<const char*>(data),
                         strnlen(reinterpret_cast<const char*>(data), len));
      continue;
    }
    object.attributes.push_back(RawAttribute{type, std::vector<uint8_t>(data, data + len)});
  }
  exchange->objects->push_back(std::move(object));
  return NL_OK;
}

core::Status enableExtack(nl_sock* sock) {
  int one = 1;
  int fd = nl_socket_get_fd(sock);
  // Best effort: without it errors still carry errno, only not the kernel's sentence.
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  return core::Status::ok();
}

core::Status exchangeError(const Exchange& exchange, const std::string& what) {
  int errnum = -exchange.error;
  int nle = nl_syserr2nlerr(errnum);
  std::string message = what + ": ";
  message += exchange.extack.empty() ? std::string(strerror(errnum))
                                     : exchange.extack + " (" + strerror(errnum) + ")";
  return nlStatusWithMessage(nle, message);
}

// Sends msg and runs the receive loop until the ack, the end of the dump or an error.
core::Status transact(nl_sock* sock, nl_msg* msg, Exchange& exchange, const std::string& what) {
  FC_RETURN_IF_ERROR(enableExtack(sock));
  CbPtr cb(nl_cb_alloc(NL_CB_DEFAULT));
  if (!cb) return core::Status(core::StatusCode::kInternal, "cannot allocate netlink callbacks");
  nl_cb_err(cb.get(), NL_CB_CUSTOM, onError, &exchange);
  nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, onAck, &exchange);
  nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, onFinish, &exchange);
  if (exchange.objects != nullptr) {
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, onObject, &exchange);
  }
  nlmsg_hdr(msg)->nlmsg_seq = NL_AUTO_SEQ;  // a retried request needs a new sequence number
  int err = nl_send_auto(sock, msg);
  if (err < 0) return nlStatus(err, what);
  while (!exchange.done) {
    err = nl_recvmsgs(sock, cb.get());
    if (exchange.error != 0) return exchangeError(exchange, what);
    if (err < 0) return nlStatus(err, what);
  }
  if (exchange.parse_failed) {
    return core::Status(core::StatusCode::kInternal, what + ": malformed reply from the kernel");
  }
  return core::Status::ok();
}

uint64_t readU64(const std::vector<uint8_t>& data, size_t offset) {
  uint64_t value = 0;
  if (offset + sizeof(value) <= data.size())
    std::memcpy(&value, data.data() + offset, sizeof(value));
  return value;
}

uint32_t readU32(const std::vector<uint8_t>& data, size_t offset) {
  uint32_t value = 0;
  if (offset + sizeof(value) <= data.size())
    std::memcpy(&value, data.data() + offset, sizeof(value));
  return value;
}

}  // namespace

core::Result<std::vector<TcObject>> dumpTc(nl_sock* sock, TcDump what, int ifindex,
                                           uint32_t parent) {
  int type = RTM_GETQDISC;
  const char* noun = "qdiscs";
  if (what == TcDump::kClasses) {
    type = RTM_GETTCLASS;
    noun = "classes";
  } else if (what == TcDump::kFilters) {
    type = RTM_GETTFILTER;
    noun = "filters";
  }
  MsgPtr msg(nlmsg_alloc_simple(type, NLM_F_DUMP));
  if (!msg) return core::Status(core::StatusCode::kInternal, "cannot allocate a netlink message");
  tcmsg tcm{};
  tcm.tcm_family = AF_UNSPEC;
  tcm.tcm_ifindex = ifindex;
  tcm.tcm_parent = parent;
  int err = nlmsg_append(msg.get(), &tcm, sizeof(tcm), NLMSG_ALIGNTO);
  if (err < 0) return nlStatus(err, std::string("cannot build a dump of ") + noun);
  std::vector<TcObject> objects;
  Exchange exchange;
  exchange.objects = &objects;
  FC_RETURN_IF_ERROR(transact(sock, msg.get(), exchange, std::string("cannot list ") + noun));
  return objects;
}

core::Status newQdisc(nl_sock* sock, int ifindex, uint32_t parent, uint32_t handle,
                      const std::string& kind, const std::vector<RawAttribute>& attributes,
                      int flags) {
  // nlmsg_alloc_simple() holds one page; a netem delay table alone is 8 KiB.
  size_t size = NLMSG_SPACE(sizeof(tcmsg)) + NLA_ALIGN(NLA_HDRLEN + kind.size() + 1);
  for (const RawAttribute& attribute : attributes) {
    size += NLA_ALIGN(NLA_HDRLEN + attribute.data.size());
  }
  MsgPtr msg(nlmsg_alloc_size(size + 256));
  if (!msg || nlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, RTM_NEWQDISC, 0, flags) == nullptr) {
    return core::Status(core::StatusCode::kInternal, "cannot allocate a netlink message");
  }
  tcmsg tcm{};
  tcm.tcm_family = AF_UNSPEC;
  tcm.tcm_ifindex = ifindex;
  tcm.tcm_parent = parent;
  tcm.tcm_handle = handle;
  const std::string what = "cannot create qdisc " + kind;
  int err = nlmsg_append(msg.get(), &tcm, sizeof(tcm), NLMSG_ALIGNTO);
  if (err >= 0) err = nla_put_string(msg.get(), TCA_KIND, kind.c_str());
  for (const RawAttribute& attribute : attributes) {
    if (err < 0) break;
    err = nla_put(msg.get(), attribute.type, static_cast<int>(attribute.data.size()),
                  attribute.data.data());
  }
  if (err < 0) return nlStatus(err, what);
  // Kernels that load a qdisc module during the request answer EAGAIN once it is loaded and
  // expect the request again (tc does the same).
  for (int attempt = 1;; ++attempt) {
    Exchange exchange;
    core::Status status = transact(sock, msg.get(), exchange, what);
    if (exchange.error != -EAGAIN || attempt == 3) return status;
  }
}

const RawAttribute* findAttribute(const TcObject& object, uint16_t type) {
  for (const RawAttribute& attribute : object.attributes) {
    if (attribute.type == type) return &attribute;
  }
  return nullptr;
}

QdiscInfo qdiscInfoOf(const TcObject& object) {
  QdiscInfo info;
  info.kind = object.kind;
  info.handle = object.handle;
  if (const RawAttribute* options = findAttribute(object, TCA_OPTIONS)) {
    info.options = options->data;
  }
  if (const RawAttribute* stats2 = findAttribute(object, TCA_STATS2)) {
    const std::vector<uint8_t>& data = stats2->data;
    size_t offset = 0;
    uint64_t packets64 = 0;
    while (offset + NLA_HDRLEN <= data.size()) {
      nlattr header{};
      std::memcpy(&header, data.data() + offset, NLA_HDRLEN);
      if (header.nla_len < NLA_HDRLEN || offset + header.nla_len > data.size()) break;
      std::vector<uint8_t> payload(data.begin() + offset + NLA_HDRLEN,
                                   data.begin() + offset + header.nla_len);
      switch (header.nla_type & NLA_TYPE_MASK) {
        case TCA_STATS_BASIC:
          info.bytes = readU64(payload, offsetof(gnet_stats_basic, bytes));
          info.packets = readU32(payload, offsetof(gnet_stats_basic, packets));
          break;
        case TCA_STATS_PKT64:
          packets64 = readU64(payload, 0);
          break;
        case TCA_STATS_QUEUE:
          info.qlen = readU32(payload, offsetof(gnet_stats_queue, qlen));
          info.backlog = readU32(payload, offsetof(gnet_stats_queue, backlog));
          info.drops = readU32(payload, offsetof(gnet_stats_queue, drops));
          info.requeues = readU32(payload, offsetof(gnet_stats_queue, requeues));
          info.overlimits = readU32(payload, offsetof(gnet_stats_queue, overlimits));
          break;
        default:
          break;
      }
      offset += NLA_ALIGN(header.nla_len);
    }
    if (packets64 != 0) info.packets = packets64;
  } else if (const RawAttribute* stats = findAttribute(object, TCA_STATS)) {
    const std::vector<uint8_t>& data = stats->data;
    info.bytes = readU64(data, offsetof(tc_stats, bytes));
    info.packets = readU32(data, offsetof(tc_stats, packets));
    info.drops = readU32(data, offsetof(tc_stats, drops));
    info.overlimits = readU32(data, offsetof(tc_stats, overlimits));
    info.qlen = readU32(data, offsetof(tc_stats, qlen));
    info.backlog = readU32(data, offsetof(tc_stats, backlog));
  }
  return info;
}

}  // namespace fabric_chaos::sys::raw
