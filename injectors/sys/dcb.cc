#include "injectors/sys/dcb.h"

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/netns.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace fabric_chaos::sys {

Dcb::~Dcb() = default;

namespace {

// dcb_doit() answers while our sendmsg() runs; the timeout only guards against a lost answer.
constexpr int kAnswerTimeoutSeconds = 5;

struct FreeDeleter {
  void operator()(unsigned char* buf) const { std::free(buf); }
};

enum class Request { kGet, kSet };

const char* messageName(Request request) {
  return request == Request::kGet ? "RTM_GETDCB" : "RTM_SETDCB";
}

std::string inNetns(const std::string& netns) {
  return netns.empty() ? std::string() : " in netns " + netns;
}

// What the kernel's NLMSG_ERROR means for this device.
core::Status answerError(const DcbAnswer& answer, nl_sock* sock, Request request,
                         const std::string& netns, const std::string& ifname,
                         const std::string& what) {
  const int err = answer.error;
  if (err == ENODEV) {
    return core::Status(core::StatusCode::kNotFound, noSuchDevice(netns, ifname), err);
  }
  if (err == EOPNOTSUPP) {
    // dcb_doit() looks the device up before it asks for DCB ops, so EOPNOTSUPP names an existing
    // device, except on a kernel without CONFIG_DCB, where rtnetlink refuses every DCB message.
    auto ifindex = ifindexOf(sock, netns, ifname);
    if (!ifindex && ifindex.status().code() == core::StatusCode::kNotFound) {
      return core::Status(core::StatusCode::kNotFound, noSuchDevice(netns, ifname), ENODEV);
    }
    return core::Status(core::StatusCode::kNotSupported,
                        ifname + inNetns(netns) + " has no DCB support (EOPNOTSUPP from " +
                            messageName(request) + ")",
                        err);
  }
  core::Status status = core::errnoStatus(err, what);
  if (answer.extack.empty()) return status;
  return core::Status(status.code(), what + ": " + answer.extack + " (" + std::strerror(err) + ")",
                      err);
}

// Sends one request on a fresh NETLINK_ROUTE socket of the calling thread's namespace and
// returns the kernel's reply message; the kernel's errors become Status.
core::Result<std::vector<uint8_t>> exchange(Request request, const std::string& netns,
                                            const std::string& ifname, const IeeePfc* pfc,
                                            const std::string& what) {
  auto sock = connectRoute();
  if (!sock) return sock.status();
  nl_sock* sk = sock->get();
  const int fd = nl_socket_get_fd(sk);
  const int one = 1;
  // Best effort: without them errors still carry errno, only not the kernel's sentence.
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
  (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
  timeval timeout{};
  timeout.tv_sec = kAnswerTimeoutSeconds;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0) {
    return core::errnoStatus(errno, what + ": cannot set a receive timeout");
  }

  const uint32_t seq = nl_socket_use_seq(sk);
  auto bytes = request == Request::kGet ? encodeIeeeGetRequest(ifname, seq)
                                        : encodeIeeeSetPfcRequest(ifname, *pfc, seq);
  if (!bytes) return bytes.status().withContext(what);
  int err = nl_sendto(sk, bytes->data(), bytes->size());
  if (err < 0) return nlStatus(err, what);

  for (;;) {
    sockaddr_nl peer{};
    unsigned char* raw = nullptr;
    const int n = nl_recv(sk, &peer, &raw, nullptr);
    std::unique_ptr<unsigned char, FreeDeleter> buf(raw);
    if (n < 0) return nlStatus(n, what);
    if (n == 0) {
      return core::Status(core::StatusCode::kTimeout, what + ": no answer from the kernel within " +
                                                          std::to_string(kAnswerTimeoutSeconds) +
                                                          " s");
    }
    auto answer = findDcbAnswer(std::span<const uint8_t>(buf.get(), static_cast<size_t>(n)), seq);
    if (!answer) {
      return core::Status(core::StatusCode::kInternal,
                          what + ": " + answer.status().message() + " from the kernel");
    }
    if (!answer->found) continue;
    if (answer->error != 0) return answerError(*answer, sk, request, netns, ifname, what);
    return std::move(answer->reply);
  }
}

class KernelDcb final : public Dcb {
 public:
  core::Result<IeeePfc> getIeeePfc(const std::string& netns, const std::string& ifname) override {
    const std::string what = "cannot read PFC of " + ifname + inNetns(netns);
    if (!isValidIfname(ifname)) return invalidName(ifname);
    std::optional<IeeePfc> pfc;
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      auto reply = exchange(Request::kGet, netns, ifname, nullptr, what);
      if (!reply) return reply.status();
      auto decoded = decodeIeeeGetReply(*reply);
      if (decoded) {
        pfc = *decoded;
        return core::Status::ok();
      }
      if (decoded.status().code() == core::StatusCode::kNotFound) {
        return core::Status(core::StatusCode::kNotSupported,
                            ifname + inNetns(netns) + " reports no IEEE PFC configuration (" +
                                decoded.status().message() + ")");
      }
      return core::Status(core::StatusCode::kInternal, what + ": " + decoded.status().message());
    });
    if (!status) return status;
    return *pfc;
  }

  core::Status setIeeePfc(const std::string& netns, const std::string& ifname,
                          const IeeePfc& pfc) override {
    const std::string what = "cannot set PFC on " + ifname + inNetns(netns);
    if (!isValidIfname(ifname)) return invalidName(ifname);
    return runInNetns(netns, [&]() -> core::Status {
      auto reply = exchange(Request::kSet, netns, ifname, &pfc, what);
      if (!reply) return reply.status();
      auto driver_errno = decodeIeeeSetReply(*reply);
      if (!driver_errno) {
        return core::Status(core::StatusCode::kInternal,
                            what + ": " + driver_errno.status().message());
      }
      if (*driver_errno != 0) {
        return core::errnoStatus(*driver_errno, what + ": the driver refused it");
      }
      return core::Status::ok();
    });
  }

 private:
  static core::Status invalidName(const std::string& ifname) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "invalid interface name '" + ifname + "'");
  }
};

}  // namespace

std::unique_ptr<Dcb> makeKernelDcb() { return std::make_unique<KernelDcb>(); }

}  // namespace fabric_chaos::sys
