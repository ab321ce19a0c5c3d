#include "injectors/sys/dcb_codec.h"

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>

#include "injectors/sys/netlink_attributes.h"
#include "injectors/sys/netlink_status.h"

namespace fabric_chaos::sys {
namespace {

// The uapi layout IeeePfc mirrors (the kernel's nla_policy asks for at least this many bytes).
static_assert(sizeof(ieee_pfc) == 136);
static_assert(offsetof(ieee_pfc, delay) == 4 && offsetof(ieee_pfc, requests) == 8 &&
              offsetof(ieee_pfc, indications) == 72);
static_assert(sizeof(dcbmsg) == 4);

// The uapi macros are int-typed; sizes here are size_t.
constexpr size_t kMsgHeader = NLMSG_ALIGN(sizeof(nlmsghdr));
constexpr size_t kDcbHeader = NLMSG_ALIGN(sizeof(dcbmsg));
constexpr size_t alignMsg(size_t len) { return NLMSG_ALIGN(len); }

struct MsgDeleter {
  void operator()(nl_msg* msg) const { nlmsg_free(msg); }
};
using MsgPtr = std::unique_ptr<nl_msg, MsgDeleter>;

core::Status malformed(const std::string& what) {
  return core::Status(core::StatusCode::kInvalidArgument, what);
}

ieee_pfc toKernel(const IeeePfc& pfc) {
  ieee_pfc raw;
  std::memset(&raw, 0, sizeof(raw));  // padding after mbc and delay goes out as zeros
  raw.pfc_cap = pfc.pfc_cap;
  raw.pfc_en = pfc.pfc_en;
  raw.mbc = pfc.mbc;
  raw.delay = pfc.delay;
  for (size_t i = 0; i < pfc.requests.size(); ++i) {
    raw.requests[i] = pfc.requests[i];
    raw.indications[i] = pfc.indications[i];
  }
  return raw;
}

IeeePfc fromKernel(const ieee_pfc& raw) {
  IeeePfc pfc;
  pfc.pfc_cap = raw.pfc_cap;
  pfc.pfc_en = raw.pfc_en;
  pfc.mbc = raw.mbc;
  pfc.delay = raw.delay;
  for (size_t i = 0; i < pfc.requests.size(); ++i) {
    pfc.requests[i] = raw.requests[i];
    pfc.indications[i] = raw.indications[i];
  }
  return pfc;
}

// One request: header, dcbmsg, DCB_ATTR_IFNAME and, for a set, the DCB_ATTR_IEEE nest.
core::Result<std::vector<uint8_t>> encodeRequest(uint16_t type, uint8_t cmd,
                                                 const std::string& ifname, uint32_t seq,
                                                 const IeeePfc* pfc) {
  if (!isValidIfname(ifname)) {
    return malformed("invalid interface name '" + ifname + "'");
  }
  const std::string what = std::string("cannot build a ") +
                           (type == RTM_SETDCB ? "RTM_SETDCB" : "RTM_GETDCB") + " request for " +
                           ifname;
  MsgPtr msg(nlmsg_alloc());
  if (!msg || nlmsg_put(msg.get(), NL_AUTO_PORT, seq, type, 0, NLM_F_REQUEST) == nullptr) {
    return core::Status(core::StatusCode::kInternal, what + ": out of memory", NLE_NOMEM);
  }
  dcbmsg dcb;
  std::memset(&dcb, 0, sizeof(dcb));
  dcb.dcb_family = AF_UNSPEC;
  dcb.cmd = cmd;
  int err = nlmsg_append(msg.get(), &dcb, sizeof(dcb), NLMSG_ALIGNTO);
  if (err >= 0) err = nla_put_string(msg.get(), DCB_ATTR_IFNAME, ifname.c_str());
  if (err >= 0 && pfc != nullptr) {
    nlattr* nest = nla_nest_start(msg.get(), DCB_ATTR_IEEE);
    if (nest == nullptr) {
      err = -NLE_NOMEM;
    } else {
      // Whether libnl marks nests differs between its versions; the kernel accepts both, the
      // bytes should not depend on the library.
      nest->nla_type |= NLA_F_NESTED;
      const ieee_pfc raw = toKernel(*pfc);
      err = nla_put(msg.get(), DCB_ATTR_IEEE_PFC, sizeof(raw), &raw);
      if (err >= 0) err = nla_nest_end(msg.get(), nest);
    }
  }
  if (err < 0) return nlStatus(err, what);
  const nlmsghdr* hdr = nlmsg_hdr(msg.get());
  const auto* begin = reinterpret_cast<const uint8_t*>(hdr);
  return std::vector<uint8_t>(begin, begin + hdr->nlmsg_len);
}

using Attribute = NetlinkAttribute;

// The attributes after the dcbmsg of one RTM_GETDCB / RTM_SETDCB message carrying `cmd`.
core::Result<std::vector<Attribute>> dcbAttributes(std::span<const uint8_t> message, uint16_t type,
                                                   uint8_t cmd, const char* name) {
  const std::string what = std::string("malformed ") + name + " reply";
  if (message.size() < kMsgHeader) {
    return malformed(what + ": " + std::to_string(message.size()) +
                     " bytes, shorter than a netlink header");
  }
  nlmsghdr hdr;
  std::memcpy(&hdr, message.data(), sizeof(hdr));
  if (hdr.nlmsg_len < kMsgHeader || hdr.nlmsg_len > message.size()) {
    return malformed(what + ": nlmsg_len " + std::to_string(hdr.nlmsg_len) + " with " +
                     std::to_string(message.size()) + " bytes");
  }
  if (hdr.nlmsg_type != type) {
    return malformed(what + ": message type " + std::to_string(hdr.nlmsg_type));
  }
  if (hdr.nlmsg_len < kMsgHeader + sizeof(dcbmsg)) {
    return malformed(what + ": no dcbmsg header");
  }
  dcbmsg dcb;
  std::memcpy(&dcb, message.data() + kMsgHeader, sizeof(dcb));
  if (dcb.cmd != cmd) {
    return malformed(what + ": DCB command " + std::to_string(dcb.cmd));
  }
  const size_t start = kMsgHeader + kDcbHeader;
  auto attributes = splitNetlinkAttributes(message.subspan(start, hdr.nlmsg_len - start));
  if (!attributes) return malformed(what + ": an attribute overruns the message");
  return std::move(*attributes);
}

}  // namespace

core::Result<std::vector<uint8_t>> encodeIeeeGetRequest(const std::string& ifname, uint32_t seq) {
  return encodeRequest(RTM_GETDCB, DCB_CMD_IEEE_GET, ifname, seq, nullptr);
}

core::Result<std::vector<uint8_t>> encodeIeeeSetPfcRequest(const std::string& ifname,
                                                           const IeeePfc& pfc, uint32_t seq) {
  return encodeRequest(RTM_SETDCB, DCB_CMD_IEEE_SET, ifname, seq, &pfc);
}

core::Result<DcbAnswer> findDcbAnswer(std::span<const uint8_t> datagram, uint32_t seq) {
  size_t offset = 0;
  while (offset < datagram.size()) {
    if (datagram.size() - offset < kMsgHeader) {
      return malformed("netlink datagram ends in a partial header");
    }
    nlmsghdr hdr;
    std::memcpy(&hdr, datagram.data() + offset, sizeof(hdr));
    if (hdr.nlmsg_len < kMsgHeader || hdr.nlmsg_len > datagram.size() - offset) {
      return malformed("netlink message with nlmsg_len " + std::to_string(hdr.nlmsg_len) +
                       " where " + std::to_string(datagram.size() - offset) + " bytes are left");
    }
    const std::span<const uint8_t> message = datagram.subspan(offset, hdr.nlmsg_len);
    offset += alignMsg(hdr.nlmsg_len);
    if (hdr.nlmsg_seq != seq) continue;
    if (hdr.nlmsg_type == NLMSG_ERROR) {
      if (message.size() < kMsgHeader + sizeof(nlmsgerr)) {
        return malformed("NLMSG_ERROR shorter than struct nlmsgerr");
      }
      nlmsgerr err;
      std::memcpy(&err, message.data() + kMsgHeader, sizeof(err));
      if (err.error == 0) continue;  // an ack; the reply is what answers
      if (err.error > 0 || err.error < -4095) {
        return malformed("NLMSG_ERROR with error " + std::to_string(err.error));
      }
      DcbAnswer answer;
      answer.found = true;
      answer.error = -err.error;
      answer.extack = netlinkExtackText(message, hdr, err);
      return answer;
    }
    if (hdr.nlmsg_type == RTM_GETDCB || hdr.nlmsg_type == RTM_SETDCB) {
      DcbAnswer answer;
      answer.found = true;
      answer.reply.assign(message.begin(), message.end());
      return answer;
    }
    // NLMSG_NOOP, NLMSG_DONE, anything else with our sequence number: not an answer.
  }
  return DcbAnswer{};
}

core::Result<IeeePfc> decodeIeeeGetReply(std::span<const uint8_t> message) {
  auto attributes = dcbAttributes(message, RTM_GETDCB, DCB_CMD_IEEE_GET, "RTM_GETDCB");
  if (!attributes) return attributes.status();
  const Attribute* ieee = findNetlinkAttribute(*attributes, DCB_ATTR_IEEE);
  if (ieee == nullptr) {
    return core::Status(core::StatusCode::kNotFound, "RTM_GETDCB reply has no DCB_ATTR_IEEE");
  }
  auto nested = splitNetlinkAttributes(ieee->payload);
  if (!nested) return malformed("malformed RTM_GETDCB reply: DCB_ATTR_IEEE overruns itself");
  const Attribute* pfc = findNetlinkAttribute(*nested, DCB_ATTR_IEEE_PFC);
  if (pfc == nullptr) {
    return core::Status(core::StatusCode::kNotFound, "RTM_GETDCB reply has no DCB_ATTR_IEEE_PFC");
  }
  if (pfc->payload.size() < sizeof(ieee_pfc)) {
    return malformed("malformed RTM_GETDCB reply: DCB_ATTR_IEEE_PFC has " +
                     std::to_string(pfc->payload.size()) + " bytes, struct ieee_pfc " +
                     std::to_string(sizeof(ieee_pfc)));
  }
  ieee_pfc raw;
  std::memcpy(&raw, pfc->payload.data(), sizeof(raw));
  return fromKernel(raw);
}

core::Result<int> decodeIeeeSetReply(std::span<const uint8_t> message) {
  auto attributes = dcbAttributes(message, RTM_SETDCB, DCB_CMD_IEEE_SET, "RTM_SETDCB");
  if (!attributes) return attributes.status();
  const Attribute* status = findNetlinkAttribute(*attributes, DCB_ATTR_IEEE);
  if (status == nullptr) {
    return core::Status(core::StatusCode::kNotFound, "RTM_SETDCB reply has no DCB_ATTR_IEEE");
  }
  if (status->payload.empty()) {
    return malformed("malformed RTM_SETDCB reply: empty DCB_ATTR_IEEE status");
  }
  // nla_put_u8(skb, DCB_ATTR_IEEE, err) with err a negative errno keeps its low byte.
  const int low_byte = status->payload[0];
  return low_byte == 0 ? 0 : 256 - low_byte;
}

}  // namespace fabric_chaos::sys
