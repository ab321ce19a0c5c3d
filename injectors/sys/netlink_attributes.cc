#include "injectors/sys/netlink_attributes.h"

#include <cstring>

namespace fabric_chaos::sys {
namespace {

constexpr size_t kMsgHeader = NLMSG_ALIGN(sizeof(nlmsghdr));
constexpr size_t kAttrHeader = NLA_ALIGN(sizeof(nlattr));

}  // namespace

std::optional<std::vector<NetlinkAttribute>> splitNetlinkAttributes(std::span<const uint8_t> data) {
  std::vector<NetlinkAttribute> out;
  size_t offset = 0;
  while (offset < data.size()) {
    if (data.size() - offset < kAttrHeader) return std::nullopt;
    nlattr header;
    std::memcpy(&header, data.data() + offset, sizeof(header));
    if (header.nla_len < kAttrHeader || header.nla_len > data.size() - offset) {
      return std::nullopt;
    }
    out.push_back(
        NetlinkAttribute{static_cast<uint16_t>(header.nla_type & NLA_TYPE_MASK),
                         data.subspan(offset + kAttrHeader, header.nla_len - kAttrHeader)});
    offset += NLA_ALIGN(header.nla_len);
  }
  return out;
}

const NetlinkAttribute* findNetlinkAttribute(const std::vector<NetlinkAttribute>& attributes,
                                             uint16_t type) {
  const NetlinkAttribute* found = nullptr;
  for (const NetlinkAttribute& attribute : attributes) {
    if (attribute.type == type) found = &attribute;
  }
  return found;
}

std::string netlinkExtackText(std::span<const uint8_t> message, const nlmsghdr& header,
                              const nlmsgerr& error) {
  if ((header.nlmsg_flags & NLM_F_ACK_TLVS) == 0) return "";
  // After the error code: only the request's header when capped, else the whole request.
  size_t echoed = sizeof(nlmsghdr);
  if ((header.nlmsg_flags & NLM_F_CAPPED) == 0) echoed = error.msg.nlmsg_len;
  const size_t start = NLMSG_ALIGN(kMsgHeader + sizeof(int) + echoed);
  if (echoed < sizeof(nlmsghdr) || start > message.size()) return "";
  auto tlvs = splitNetlinkAttributes(message.subspan(start));
  if (!tlvs) return "";
  const NetlinkAttribute* text = findNetlinkAttribute(*tlvs, NLMSGERR_ATTR_MSG);
  if (text == nullptr) return "";
  const auto* chars = reinterpret_cast<const char*>(text->payload.data());
  return std::string(chars, strnlen(chars, text->payload.size()));
}

}  // namespace fabric_chaos::sys
