#include "injectors/sys/rdma_nl_codec.h"

#include <linux/netlink.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>

#include <cstring>

#include "injectors/sys/netlink_attributes.h"
#include "injectors/sys/netlink_status.h"

namespace fabric_chaos::sys {
namespace {

constexpr size_t kMsgHeader = NLMSG_ALIGN(sizeof(nlmsghdr));
constexpr size_t kAttrHeader = NLA_ALIGN(sizeof(nlattr));
constexpr size_t alignAttr(size_t len) { return NLA_ALIGN(len); }
constexpr size_t alignMsg(size_t len) { return NLMSG_ALIGN(len); }

// The kernel's limits on the names NEWLINK carries (nldev_policy, nldev_newlink).
constexpr size_t kMaxDeviceName = 63;  // IB_DEVICE_NAME_MAX - 1
constexpr size_t kMaxLinkType = 15;    // IFNAMSIZ - 1

core::Status malformed(const std::string& what) {
  return core::Status(core::StatusCode::kInvalidArgument, what);
}

// One request: the netlink header, then attributes; finish() writes the length.
class Request {
 public:
  Request(uint8_t command, uint16_t flags, uint32_t seq) {
    nlmsghdr header{};
    header.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, command);
    header.nlmsg_flags = flags;
    header.nlmsg_seq = seq;
    append(&header, sizeof(header));
  }

  Request& u32(uint16_t type, uint32_t value) { return attribute(type, &value, sizeof(value)); }
  // With its terminating NUL: the kernel's policy for these names is NLA_NUL_STRING.
  Request& string(uint16_t type, const std::string& value) {
    return attribute(type, value.c_str(), value.size() + 1);
  }

  std::vector<uint8_t> finish() {
    const auto length = static_cast<uint32_t>(bytes_.size());
    std::memcpy(bytes_.data(), &length, sizeof(length));  // nlmsg_len comes first
    return std::move(bytes_);
  }

 private:
  Request& attribute(uint16_t type, const void* payload, size_t size) {
    nlattr header{};
    header.nla_len = static_cast<uint16_t>(kAttrHeader + size);
    header.nla_type = type;
    append(&header, sizeof(header));
    append(payload, size);
    bytes_.resize(alignAttr(bytes_.size()), 0);
    return *this;
  }
  void append(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + size);
  }

  std::vector<uint8_t> bytes_;
};

constexpr uint16_t kDoFlags = NLM_F_REQUEST | NLM_F_ACK;

using Attribute = NetlinkAttribute;

const std::vector<uint8_t>* find(const RdmaNlReply& reply, uint16_t type) {
  auto it = reply.attributes.find(type);
  return it == reply.attributes.end() ? nullptr : &it->second;
}

std::optional<uint32_t> u32Of(const RdmaNlReply& reply, uint16_t type) {
  const std::vector<uint8_t>* payload = find(reply, type);
  if (payload == nullptr || payload->size() < sizeof(uint32_t)) return std::nullopt;
  uint32_t value = 0;
  std::memcpy(&value, payload->data(), sizeof(value));
  return value;
}

std::optional<uint8_t> u8Of(const RdmaNlReply& reply, uint16_t type) {
  const std::vector<uint8_t>* payload = find(reply, type);
  if (payload == nullptr || payload->empty()) return std::nullopt;
  return (*payload)[0];
}

// A NUL-terminated string attribute; text up to the first NUL (or the end, when it has none).
std::optional<std::string> stringOf(std::span<const uint8_t> payload) {
  const auto* chars = reinterpret_cast<const char*>(payload.data());
  return std::string(chars, strnlen(chars, payload.size()));
}

std::optional<std::string> stringOf(const RdmaNlReply& reply, uint16_t type) {
  const std::vector<uint8_t>* payload = find(reply, type);
  if (payload == nullptr) return std::nullopt;
  return stringOf(std::span<const uint8_t>(*payload));
}

}  // namespace

std::vector<uint8_t> encodeRdmaDeviceDumpRequest(uint32_t seq) {
  return Request(RDMA_NLDEV_CMD_GET, NLM_F_REQUEST | NLM_F_DUMP, seq).finish();
}

std::vector<uint8_t> encodeRdmaPortRequest(uint32_t device_index, uint32_t port, uint32_t seq) {
  return Request(RDMA_NLDEV_CMD_PORT_GET, kDoFlags, seq)
      .u32(RDMA_NLDEV_ATTR_DEV_INDEX, device_index)
      .u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)
      .finish();
}

std::vector<uint8_t> encodeRdmaUverbsRequest(uint32_t device_index, uint32_t seq) {
  return Request(RDMA_NLDEV_CMD_GET_CHARDEV, kDoFlags, seq)
      .u32(RDMA_NLDEV_ATTR_DEV_INDEX, device_index)
      .string(RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs")
      .finish();
}

std::vector<uint8_t> encodeRdmaResourceSummaryRequest(uint32_t device_index, uint32_t seq) {
  return Request(RDMA_NLDEV_CMD_RES_GET, kDoFlags, seq)
      .u32(RDMA_NLDEV_ATTR_DEV_INDEX, device_index)
      .finish();
}

std::vector<uint8_t> encodeRdmaDelLinkRequest(uint32_t device_index, uint32_t seq) {
  return Request(RDMA_NLDEV_CMD_DELLINK, kDoFlags, seq)
      .u32(RDMA_NLDEV_ATTR_DEV_INDEX, device_index)
      .finish();
}

core::Result<std::vector<uint8_t>> encodeRdmaNewLinkRequest(const std::string& name,
                                                            const std::string& link_type,
                                                            const std::string& netdev,
                                                            uint32_t seq) {
  if (name.empty() || name.size() > kMaxDeviceName || name.find('%') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return malformed("invalid RDMA device name '" + name + "'");
  }
  if (link_type.empty() || link_type.size() > kMaxLinkType ||
      link_type.find('\0') != std::string::npos) {
    return malformed("invalid RDMA link type '" + link_type + "'");
  }
  if (!isValidIfname(netdev)) return malformed("invalid interface name '" + netdev + "'");
  return Request(RDMA_NLDEV_CMD_NEWLINK, kDoFlags, seq)
      .string(RDMA_NLDEV_ATTR_DEV_NAME, name)
      .string(RDMA_NLDEV_ATTR_LINK_TYPE, link_type)
      .string(RDMA_NLDEV_ATTR_NDEV_NAME, netdev)
      .finish();
}

core::Status collectRdmaNlAnswer(std::span<const uint8_t> datagram, uint32_t seq,
                                 RdmaNlAnswer& answer) {
  size_t offset = 0;
  while (offset < datagram.size()) {
    const std::span<const uint8_t> rest = datagram.subspan(offset);
    if (rest.size() < kMsgHeader) {
      return malformed("malformed RDMA netlink reply: " + std::to_string(rest.size()) +
                       " bytes left, shorter than a netlink header");
    }
    nlmsghdr header;
    std::memcpy(&header, rest.data(), sizeof(header));
    if (header.nlmsg_len < kMsgHeader || header.nlmsg_len > rest.size()) {
      return malformed("malformed RDMA netlink reply: nlmsg_len " +
                       std::to_string(header.nlmsg_len) + " with " + std::to_string(rest.size()) +
                       " bytes left");
    }
    const std::span<const uint8_t> message = rest.first(header.nlmsg_len);
    offset += alignMsg(header.nlmsg_len);
    if (header.nlmsg_seq != seq) continue;
    if (header.nlmsg_type == NLMSG_DONE) {
      answer.complete = true;
      continue;
    }
    if (header.nlmsg_type == NLMSG_ERROR) {
      if (message.size() < kMsgHeader + sizeof(nlmsgerr)) {
        return malformed("malformed RDMA netlink reply: an error message cut short");
      }
      nlmsgerr error;
      std::memcpy(&error, message.data() + kMsgHeader, sizeof(error));
      answer.complete = true;
      answer.error = error.error < 0 ? -error.error : error.error;
      if (answer.error != 0) answer.extack = netlinkExtackText(message, header, error);
      continue;
    }
    if (RDMA_NL_GET_CLIENT(header.nlmsg_type) != RDMA_NL_NLDEV) continue;
    auto attributes = splitNetlinkAttributes(message.subspan(kMsgHeader));
    if (!attributes) {
      return malformed("malformed RDMA netlink reply: an attribute overruns the message");
    }
    RdmaNlReply reply;
    reply.command = static_cast<uint16_t>(RDMA_NL_GET_OP(header.nlmsg_type));
    for (const Attribute& attribute : *attributes) {
      reply.attributes[attribute.type].assign(attribute.payload.begin(), attribute.payload.end());
    }
    answer.replies.push_back(std::move(reply));
  }
  return core::Status::ok();
}

core::Result<RdmaDeviceEntry> decodeRdmaDevice(const RdmaNlReply& reply) {
  auto index = u32Of(reply, RDMA_NLDEV_ATTR_DEV_INDEX);
  auto name = stringOf(reply, RDMA_NLDEV_ATTR_DEV_NAME);
  if (!index || !name || name->empty()) {
    return malformed("malformed RDMA device entry: no device index or name");
  }
  return RdmaDeviceEntry{*index, *name};
}

core::Result<RdmaPortEntry> decodeRdmaPort(const RdmaNlReply& reply) {
  auto device = decodeRdmaDevice(reply);
  if (!device) return malformed("malformed RDMA port reply: no device index or name");
  auto port = u32Of(reply, RDMA_NLDEV_ATTR_PORT_INDEX);
  auto state = u8Of(reply, RDMA_NLDEV_ATTR_PORT_STATE);
  auto physical = u8Of(reply, RDMA_NLDEV_ATTR_PORT_PHYS_STATE);
  if (!port || !state || !physical) {
    return malformed("malformed RDMA port reply for " + device->name +
                     ": no port index, state or physical state");
  }
  RdmaPortEntry entry;
  entry.device_index = device->index;
  entry.device = device->name;
  entry.port = *port;
  entry.state = *state;
  entry.physical_state = *physical;
  entry.netdev = stringOf(reply, RDMA_NLDEV_ATTR_NDEV_NAME).value_or("");
  entry.netdev_index = u32Of(reply, RDMA_NLDEV_ATTR_NDEV_INDEX).value_or(0);
  return entry;
}

core::Result<std::optional<uint32_t>> decodeUverbsDriverId(const RdmaNlReply& reply) {
  const std::vector<uint8_t>* payload = find(reply, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID);
  if (payload == nullptr) return std::optional<uint32_t>();
  // The uapi comment says u64; ib_uverbs_get_nl_info() puts a u32. Either is read.
  if (payload->size() == sizeof(uint64_t)) {
    uint64_t value = 0;
    std::memcpy(&value, payload->data(), sizeof(value));
    return std::optional<uint32_t>(static_cast<uint32_t>(value));
  }
  if (payload->size() != sizeof(uint32_t)) {
    return malformed("malformed uverbs reply: a driver id of " + std::to_string(payload->size()) +
                     " bytes");
  }
  return std::optional<uint32_t>(*u32Of(reply, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID));
}

core::Result<std::map<std::string, uint64_t>> decodeRdmaResourceSummary(const RdmaNlReply& reply) {
  const std::vector<uint8_t>* summary = find(reply, RDMA_NLDEV_ATTR_RES_SUMMARY);
  if (summary == nullptr) return malformed("malformed resource reply: no summary");
  auto entries = splitNetlinkAttributes(*summary);
  if (!entries) return malformed("malformed resource reply: an entry overruns the summary");
  std::map<std::string, uint64_t> counts;
  for (const Attribute& entry : *entries) {
    if (entry.type != RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY) continue;
    auto fields = splitNetlinkAttributes(entry.payload);
    if (!fields) return malformed("malformed resource reply: a field overruns its entry");
    std::optional<std::string> name;
    std::optional<uint64_t> current;
    for (const Attribute& field : *fields) {
      if (field.type == RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME) name = stringOf(field.payload);
      if (field.type == RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR &&
          field.payload.size() == sizeof(uint64_t)) {
        uint64_t value = 0;
        std::memcpy(&value, field.payload.data(), sizeof(value));
        current = value;
      }
    }
    if (!name || !current) return malformed("malformed resource reply: an entry without a count");
    counts[*name] = *current;
  }
  return counts;
}

std::string rdmaLinkTypeOfDriver(uint32_t driver_id) {
  switch (driver_id) {
    case RDMA_DRIVER_RXE:
      return "rxe";
    case RDMA_DRIVER_SIW:
      return "siw";
    default:
      return "";
  }
}

std::string ibPortStateName(uint8_t state) {
  switch (state) {
    case 0:
      return "NOP";
    case 1:
      return "DOWN";
    case 2:
      return "INIT";
    case 3:
      return "ARMED";
    case 4:
      return "ACTIVE";
    case 5:
      return "ACTIVE_DEFER";
    default:
      return "UNKNOWN";
  }
}

std::string ibPhysicalStateName(uint8_t state) {
  switch (state) {
    case 1:
      return "SLEEP";
    case 2:
      return "POLLING";
    case 3:
      return "DISABLED";
    case 4:
      return "PORT_CONFIGURATION_TRAINING";
    case 5:
      return "LINK_UP";
    case 6:
      return "LINK_ERROR_RECOVERY";
    case 7:
      return "PHY_TEST";
    default:
      return "UNKNOWN";
  }
}

}  // namespace fabric_chaos::sys
