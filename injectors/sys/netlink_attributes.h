#pragma once
// Reading netlink replies byte by byte, as the codecs that parse them (injectors/sys/dcb_codec.h,
// rdma_nl_codec.h) need: a run of attributes split into type and payload, the one the kernel
// would keep for a type, and the error text of an extended ACK. Pure: spans over the caller's
// bytes, no socket.

#include <linux/netlink.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fabric_chaos::sys {

struct NetlinkAttribute {
  uint16_t type = 0;  // flags (NLA_F_NESTED, NLA_F_NET_BYTEORDER) masked off
  std::span<const uint8_t> payload;
};

// Splits a run of attributes; nullopt when one is shorter than its header or longer than what is
// left. The last attribute may lack its alignment padding.
std::optional<std::vector<NetlinkAttribute>> splitNetlinkAttributes(std::span<const uint8_t> data);

// The last attribute of `type`, as the kernel's nla_parse keeps it; nullptr when there is none.
const NetlinkAttribute* findNetlinkAttribute(const std::vector<NetlinkAttribute>& attributes,
                                             uint16_t type);

// The NLMSGERR_ATTR_MSG text of an error message (`message`, whose header and error are given)
// with NLM_F_ACK_TLVS, "" when there is none. Best effort: a malformed TLV area only loses the
// text.
std::string netlinkExtackText(std::span<const uint8_t> message, const nlmsghdr& header,
                              const nlmsgerr& error);

}  // namespace fabric_chaos::sys
