#include "injectors/sys/rdma_device_control.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

#include "core/text.h"
#include "injectors/sys/netlink_status.h"
#include "injectors/sys/rdma_nl_codec.h"

namespace fabric_chaos::sys {
namespace {

namespace fs = std::filesystem;

// How long a reply may take. Not a bound on DELLINK: the kernel handles a request inside the
// sender's sendmsg(), so a removal that waits for programs waits there (the caller checks
// openContexts() first).
constexpr int kAnswerTimeoutSeconds = 10;

struct FreeDeleter {
  void operator()(unsigned char* p) const { std::free(p); }
};

// The kernel's errno for `what`, with its extended-ack sentence when it sent one.
core::Status kernelError(const RdmaNlAnswer& answer, const std::string& what) {
  core::Status status = core::errnoStatus(answer.error, what);
  if (answer.extack.empty()) return status;
  return core::Status(status.code(),
                      what + ": " + answer.extack + " (" + std::strerror(answer.error) + ")",
                      answer.error);
}

core::Status noSuchRdmaDevice(const std::string& device) {
  return core::Status(core::StatusCode::kNotFound, "no RDMA device " + device, ENODEV);
}

// One NETLINK_RDMA socket of the calling thread's namespace: a request, then its whole answer.
class RdmaSocket {
 public:
  static core::Result<RdmaSocket> open() {
    NlSocket sock(nl_socket_alloc());
    if (!sock) {
      return core::Status(core::StatusCode::kInternal, "cannot allocate a netlink socket",
                          NLE_NOMEM);
    }
    if (int err = nl_connect(sock.get(), NETLINK_RDMA); err < 0) {
      // Without ib_core the kernel has no RDMA netlink, and no RDMA device either.
      return nlStatusWithMessage(
          err, std::string("cannot open a NETLINK_RDMA socket (is ib_core loaded?): ") +
                   nl_geterror(err));
    }
    // Dumps of many devices may not fit the default buffer: let libnl size it.
    nl_socket_enable_msg_peek(sock.get());
    const int fd = nl_socket_get_fd(sock.get());
    const int one = 1;
    // Best effort: without it errors still carry errno, only not the kernel's sentence.
    (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    timeval timeout{};
    timeout.tv_sec = kAnswerTimeoutSeconds;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
      return core::errnoStatus(errno, "cannot set a receive timeout on a NETLINK_RDMA socket");
    }
    return RdmaSocket(std::move(sock));
  }

  uint32_t nextSeq() { return nl_socket_use_seq(sock_.get()); }

  // Sends `request` (numbered `seq`) and reads until its answer is complete.
  core::Result<RdmaNlAnswer> exchange(const std::vector<uint8_t>& request, uint32_t seq,
                                      const std::string& what) {
    if (int err = nl_sendto(sock_.get(), const_cast<uint8_t*>(request.data()), request.size());
        err < 0) {
      return nlStatus(err, what);
    }
    RdmaNlAnswer answer;
    while (!answer.complete) {
      sockaddr_nl peer{};
      unsigned char* raw = nullptr;
      const int n = nl_recv(sock_.get(), &peer, &raw, nullptr);
      std::unique_ptr<unsigned char, FreeDeleter> buffer(raw);
      if (n == 0 || n == -NLE_AGAIN) {
        return core::Status(core::StatusCode::kTimeout,
                            what + ": no answer from the kernel within " +
                                std::to_string(kAnswerTimeoutSeconds) + " s");
      }
      if (n < 0) return nlStatus(n, what);
      core::Status status = collectRdmaNlAnswer(
          std::span<const uint8_t>(buffer.get(), static_cast<size_t>(n)), seq, answer);
      if (!status) {
        return core::Status(core::StatusCode::kInternal,
                            what + ": " + status.message() + " from the kernel");
      }
    }
    return answer;
  }

  // The device's index, through a dump of every device (GET answers by index only).
  core::Result<uint32_t> indexOf(const std::string& device) {
    const uint32_t seq = nextSeq();
    auto answer = exchange(encodeRdmaDeviceDumpRequest(seq), seq, "cannot list RDMA devices");
    if (!answer) return answer.status();
    if (answer->error != 0) return kernelError(*answer, "cannot list RDMA devices");
    for (const RdmaNlReply& reply : answer->replies) {
      auto entry = decodeRdmaDevice(reply);
      if (entry && entry->name == device) return entry->index;
    }
    return noSuchRdmaDevice(device);
  }

  // A request about one device that answers with one reply.
  core::Result<RdmaNlReply> ask(const std::vector<uint8_t>& request, uint32_t seq,
                                const std::string& what) {
    auto answer = exchange(request, seq, what);
    if (!answer) return answer.status();
    if (answer->error != 0) return kernelError(*answer, what);
    if (answer->replies.empty()) {
      return core::Status(core::StatusCode::kInternal, what + ": the kernel sent no reply");
    }
    return std::move(answer->replies.front());
  }

 private:
  explicit RdmaSocket(NlSocket sock) : sock_(std::move(sock)) {}
  NlSocket sock_;
};

class NetlinkRdmaDeviceControl : public RdmaDeviceControl {
 public:
  explicit NetlinkRdmaDeviceControl(std::string sys_root) : sys_root_(std::move(sys_root)) {}

  core::Result<bool> exists(const std::string& device) override {
    auto sock = RdmaSocket::open();
    if (!sock) return sock.status();
    auto index = sock->indexOf(device);
    if (index) return true;
    if (index.status().code() == core::StatusCode::kNotFound) return false;
    return index.status();
  }

  core::Result<RdmaPortLink> port(const std::string& device, int port) override {
    const std::string what = "cannot read port " + std::to_string(port) + " of " + device;
    auto sock = RdmaSocket::open();
    if (!sock) return sock.status().withContext(what);
    auto index = sock->indexOf(device);
    if (!index) return index.status();
    if (port < 1) return noSuchPort(device, port);
    const uint32_t seq = sock->nextSeq();
    auto reply =
        sock->ask(encodeRdmaPortRequest(*index, static_cast<uint32_t>(port), seq), seq, what);
    if (!reply) {
      // nldev_port_get_doit: EINVAL for a port the device does not have.
      if (reply.status().origin() == EINVAL) return noSuchPort(device, port);
      return reply.status();
    }
    auto entry = decodeRdmaPort(*reply);
    if (!entry)
      return core::Status(core::StatusCode::kInternal, what + ": " + entry.status().message());
    return RdmaPortLink{device, port, ibPortStateName(entry->state),
                        ibPhysicalStateName(entry->physical_state), entry->netdev};
  }

  core::Result<RdmaGidAddress> gidAddress(const std::string& device, int port,
                                          int gid_index) override {
    const fs::path device_dir = fs::path(sys_root_) / "class" / "infiniband" / device;
    const fs::path port_dir = device_dir / "ports" / std::to_string(port);
    std::error_code ec;
    if (device.empty() || device.find('/') != std::string::npos ||
        !fs::is_directory(device_dir, ec)) {
      return noSuchRdmaDevice(device);
    }
    if (port < 1 || !fs::is_directory(port_dir, ec)) return noSuchPort(device, port);
    const fs::path gid_file = port_dir / "gids" / std::to_string(gid_index);
    std::ifstream in(gid_file);
    if (gid_index < 0 || !in) {
      return core::Status(core::StatusCode::kNotFound,
                          device + " port " + std::to_string(port) + " has no GID index " +
                              std::to_string(gid_index),
                          ENOENT);
    }
    const std::string text = core::trimWhitespace(
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    auto address = gidAddressOf(text);
    if (!address) {
      return address.status().withContext(device + " port " + std::to_string(port) + " GID " +
                                          std::to_string(gid_index));
    }
    return address;
  }

  core::Result<std::string> linkType(const std::string& device) override {
    const std::string what = "cannot tell which driver " + device + " belongs to";
    auto sock = RdmaSocket::open();
    if (!sock) return sock.status().withContext(what);
    auto index = sock->indexOf(device);
    if (!index) return index.status();
    const uint32_t seq = sock->nextSeq();
    auto reply = sock->ask(encodeRdmaUverbsRequest(*index, seq), seq, what);
    if (!reply) {
      // ib_get_client_nl_info: no "uverbs" client registered.
      if (reply.status().origin() == EOPNOTSUPP) {
        return core::Status(core::StatusCode::kNotSupported,
                            what + ": the kernel's uverbs is not loaded (modprobe ib_uverbs)",
                            EOPNOTSUPP);
      }
      return reply.status();
    }
    auto driver = decodeUverbsDriverId(*reply);
    if (!driver) {
      return core::Status(core::StatusCode::kInternal, what + ": " + driver.status().message());
    }
    return driver->has_value() ? rdmaLinkTypeOfDriver(**driver) : std::string();
  }

  core::Result<int> openContexts(const std::string& device) override {
    const std::string what = "cannot count the contexts open on " + device;
    auto sock = RdmaSocket::open();
    if (!sock) return sock.status().withContext(what);
    auto index = sock->indexOf(device);
    if (!index) return index.status();
    const uint32_t seq = sock->nextSeq();
    auto reply = sock->ask(encodeRdmaResourceSummaryRequest(*index, seq), seq, what);
    if (!reply) return reply.status();
    auto summary = decodeRdmaResourceSummary(*reply);
    if (!summary) {
      return core::Status(core::StatusCode::kInternal, what + ": " + summary.status().message());
    }
    auto it = summary->find("ctx");
    if (it == summary->end()) {
      return core::Status(core::StatusCode::kNotSupported,
                          what + ": this kernel does not count user contexts");
    }
    return static_cast<int>(it->second);
  }

  core::Status removeLink(const std::string& device) override {
    const std::string what = "cannot remove RDMA device " + device;
    auto sock = RdmaSocket::open();
    if (!sock) return sock.status().withContext(what);
    auto index = sock->indexOf(device);
    if (!index) return index.status();
    const uint32_t seq = sock->nextSeq();
    auto answer = sock->exchange(encodeRdmaDelLinkRequest(*index, seq), seq, what);
    if (!answer) return answer.status();
    if (answer->error == EINVAL) {
      // nldev_dellink: the device went away meanwhile, or its driver does not allow user space
      // to unregister it (IBK_ALLOW_USER_UNREG: only rxe and siw do).
      return core::Status(core::StatusCode::kNotSupported,
                          what +
                              ": the kernel refused (EINVAL): only software devices (rxe, "
                              "siw) can be removed from user space",
                          EINVAL);
    }
    if (answer->error != 0) return kernelError(*answer, what);
    return core::Status::ok();
  }

  core::Status addLink(const std::string& name, const std::string& link_type,
                       const std::string& netdev) override {
    const std::string what =
        "cannot add RDMA device " + name + " (type " + link_type + ") on " + netdev;
    auto sock = RdmaSocket::open();
    if (!sock) return sock.status().withContext(what);
    const uint32_t seq = sock->nextSeq();
    auto request = encodeRdmaNewLinkRequest(name, link_type, netdev, seq);
    if (!request) return request.status().withContext(what);
    auto answer = sock->exchange(*request, seq, what);
    if (!answer) return answer.status();
    switch (answer->error) {
      case 0:
        return core::Status::ok();
      case ENODEV:
        return core::Status(core::StatusCode::kNotFound, what + ": no netdev " + netdev, ENODEV);
      case EEXIST:
        return core::Status(core::StatusCode::kAlreadyExists,
                            what + ": " + netdev + " already has a " + link_type +
                                " device, or the name " + name + " is taken",
                            EEXIST);
      case EINVAL:
        // nldev_newlink: no such link type (its module could not be loaded), or a name refused.
        return core::Status(core::StatusCode::kNotSupported,
                            what + ": the kernel refused (EINVAL): no RDMA link type " + link_type +
                                " (is its module, rdma_" + link_type + ", available?)",
                            EINVAL);
      default:
        return kernelError(*answer, what);
    }
  }

 private:
  static core::Status noSuchPort(const std::string& device, int port) {
    return core::Status(core::StatusCode::kNotFound,
                        device + " has no port " + std::to_string(port), EINVAL);
  }

  std::string sys_root_;
};

}  // namespace

core::Result<RdmaGidAddress> gidAddressOf(const std::string& sysfs_gid) {
  const std::string text = core::trimWhitespace(sysfs_gid);
  const core::Status invalid(core::StatusCode::kInvalidArgument, "'" + text + "' is not a GID");
  // Eight groups of four hex digits, the form sysfs prints (%pI6).
  if (text.size() != 39) return invalid;
  std::array<uint8_t, 16> raw{};
  for (size_t group = 0; group < 8; ++group) {
    const size_t at = group * 5;
    if (group < 7 && text[at + 4] != ':') return invalid;
    for (size_t i = 0; i < 4; ++i) {
      if (!std::isxdigit(static_cast<unsigned char>(text[at + i]))) return invalid;
    }
    const unsigned long value = std::strtoul(text.substr(at, 4).c_str(), nullptr, 16);
    raw[group * 2] = static_cast<uint8_t>(value >> 8);
    raw[group * 2 + 1] = static_cast<uint8_t>(value & 0xff);
  }
  bool zero = true;
  for (uint8_t byte : raw) zero = zero && byte == 0;
  if (zero) return core::Status(core::StatusCode::kNotFound, "the GID entry is empty", ENOENT);
  // ::ffff:a.b.c.d, RFC 4291's IPv4-mapped form, is how RoCE writes an IPv4 address as a GID.
  bool mapped = raw[10] == 0xff && raw[11] == 0xff;
  for (size_t i = 0; i < 10; ++i) mapped = mapped && raw[i] == 0;
  char buffer[INET6_ADDRSTRLEN];
  if (mapped) {
    inet_ntop(AF_INET, raw.data() + 12, buffer, sizeof(buffer));
    return RdmaGidAddress{AF_INET, buffer};
  }
  inet_ntop(AF_INET6, raw.data(), buffer, sizeof(buffer));
  return RdmaGidAddress{AF_INET6, buffer};
}

core::Result<RdmaGidAddress> defaultRoceGidOf(const std::string& mac) {
  std::array<unsigned int, 6> octets{};
  char tail = 0;
  if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &octets[0], &octets[1], &octets[2],
                  &octets[3], &octets[4], &octets[5], &tail) != 6 ||
      mac.size() != 17) {
    return core::Status(core::StatusCode::kInvalidArgument, "'" + mac + "' is not a MAC address");
  }
  std::array<uint8_t, 16> raw{};
  raw[0] = 0xfe;
  raw[1] = 0x80;
  // EUI-64: the universal/local bit flipped, ff:fe in the middle.
  raw[8] = static_cast<uint8_t>(octets[0] ^ 0x02);
  raw[9] = static_cast<uint8_t>(octets[1]);
  raw[10] = static_cast<uint8_t>(octets[2]);
  raw[11] = 0xff;
  raw[12] = 0xfe;
  raw[13] = static_cast<uint8_t>(octets[3]);
  raw[14] = static_cast<uint8_t>(octets[4]);
  raw[15] = static_cast<uint8_t>(octets[5]);
  char buffer[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, raw.data(), buffer, sizeof(buffer));
  return RdmaGidAddress{AF_INET6, buffer};
}

std::unique_ptr<RdmaDeviceControl> makeNetlinkRdmaDeviceControl(std::string sys_root) {
  return std::make_unique<NetlinkRdmaDeviceControl>(std::move(sys_root));
}

}  // namespace fabric_chaos::sys
