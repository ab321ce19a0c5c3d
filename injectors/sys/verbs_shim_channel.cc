#include "injectors/sys/verbs_shim_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "core/clock.h"
#include "core/unique_fd.h"
#include "injectors/sys/proc_stat.h"
#include "verbs_shim/sys/control_server.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

constexpr std::string_view kSocketPrefix = "verbs-";
constexpr std::string_view kSocketSuffix = ".sock";
// Status answers carry a few counters per armed fault: a megabyte is a broken shim.
constexpr size_t kMaxAnswer = 1 << 20;
// How long to wait before connecting again to a program whose listen backlog is full.
constexpr int kBacklogRetryMs = 10;

// The pid in "verbs-<pid>.sock"; nullopt for every other name.
std::optional<pid_t> pidOfSocketName(std::string_view name) {
  if (name.size() <= kSocketPrefix.size() + kSocketSuffix.size() ||
      name.substr(0, kSocketPrefix.size()) != kSocketPrefix ||
      name.substr(name.size() - kSocketSuffix.size()) != kSocketSuffix) {
    return std::nullopt;
  }
  const std::string_view digits =
      name.substr(kSocketPrefix.size(), name.size() - kSocketPrefix.size() - kSocketSuffix.size());
  pid_t pid = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (error != std::errc() || end != digits.data() + digits.size() || pid <= 0) return std::nullopt;
  return pid;
}

// The members of a status answer that are there and of the right type; the rest as unknown.
ShimProcess processOf(pid_t pid, const std::string& socket, const json& answer) {
  ShimProcess process;
  process.pid = pid;
  process.socket = socket;
  if (auto comm = answer.find("comm"); comm != answer.end() && comm->is_string()) {
    process.comm = comm->get<std::string>();
  }
  if (auto rank = answer.find("rank"); rank != answer.end() && rank->is_number_integer()) {
    process.rank = rank->get<int>();
  }
  if (auto devices = answer.find("devices"); devices != answer.end() && devices->is_array()) {
    for (const json& device : *devices) {
      if (device.is_string()) process.devices.push_back(device.get<std::string>());
    }
  }
  if (auto armed = answer.find("armed"); armed != answer.end()) process.armed = *armed;
  return process;
}

class SocketVerbsShimChannel : public VerbsShimChannel {
 public:
  SocketVerbsShimChannel(std::string dir, int deadline_ms)
      : dir_(std::move(dir)), deadline_ms_(deadline_ms) {}

  core::Result<std::vector<ShimProcess>> list() override {
    std::error_code ec;
    std::vector<pid_t> pids;
    // The error_code forms throughout: a directory that goes away mid-scan is an answer.
    for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (auto pid = pidOfSocketName(it->path().filename().string())) pids.push_back(*pid);
    }
    if (ec == std::errc::no_such_file_or_directory) return std::vector<ShimProcess>{};
    if (ec) {
      return Status(StatusCode::kUnavailable,
                    "cannot read the verbs shims' directory " + dir_ + ": " + ec.message(),
                    ec.value());
    }
    std::sort(pids.begin(), pids.end());
    std::vector<ShimProcess> processes;
    for (pid_t pid : pids) {
      auto answer = ask(pid, R"({"status":true})");
      if (answer.isOk()) {
        processes.push_back(processOf(pid, verbs_shim::controlSocketPath(dir_, pid), *answer));
      }
    }
    return processes;
  }

  Status arm(pid_t pid, const verbs_shim::ArmRequest& request) override {
    return ask(pid, armRequestLine(request)).status();
  }
  Status renew(pid_t pid) override { return ask(pid, R"({"renew":true})").status(); }
  Status disarm(pid_t pid) override { return ask(pid, R"({"disarm":true})").status(); }
  std::string directory() const override { return dir_; }

 private:
  // One exchange, its answer when the shim says ok.
  core::Result<json> ask(pid_t pid, const std::string& line) {
    const std::string path = verbs_shim::controlSocketPath(dir_, pid);
    const std::string who = "the verbs shim of process " + std::to_string(pid) + " (" + path + ")";
    auto answer = exchange(pid, path, who, line);
    if (!answer.isOk()) return answer;
    if (!answer->value("ok", false)) {
      const auto error = answer->find("error");
      return Status(StatusCode::kFailedPrecondition,
                    who + " refused: " +
                        (error != answer->end() && error->is_string() ? error->get<std::string>()
                                                                      : answer->dump()));
    }
    return answer;
  }

  core::Result<json> exchange(pid_t pid, const std::string& path, const std::string& who,
                              const std::string& line) {
    const int64_t deadline_ns = core::steadyNowNs() + int64_t{deadline_ms_} * 1'000'000;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof(address.sun_path)) {
      return Status(StatusCode::kUnavailable, who + ": the socket path is too long");
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    core::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return transportError(who, "socket", errno);
    FC_RETURN_IF_ERROR(connectTo(fd.get(), address, pid, path, who, deadline_ns));
    FC_RETURN_IF_ERROR(sendLine(fd.get(), line + "\n", who, deadline_ns));
    auto answer_line = readLine(fd.get(), who, deadline_ns);
    if (!answer_line.isOk()) return answer_line.status();
    json answer = json::parse(*answer_line, nullptr, false);
    if (!answer.is_object() || !answer.contains("ok") || !answer["ok"].is_boolean()) {
      return Status(
          StatusCode::kUnavailable,
          who + " answered something that is not a control answer: " + answer_line->substr(0, 200));
    }
    return answer;
  }

  Status connectTo(int fd, const sockaddr_un& address, pid_t pid, const std::string& path,
                   const std::string& who, int64_t deadline_ns) {
    for (;;) {
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
        return Status::ok();
      }
      const int error = errno;
      if (error == EINTR) continue;
      if (error == EINPROGRESS) {
        FC_RETURN_IF_ERROR(waitFor(fd, POLLOUT, who, deadline_ns));
        int pending = 0;
        socklen_t size = sizeof(pending);
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &size) != 0) {
          return transportError(who, "connect", errno);
        }
        if (pending == 0) return Status::ok();
        return connectError(pending, pid, path, who);
      }
      if (error == EAGAIN) {
        // A UNIX socket's listen backlog is full: its program is not accepting right now.
        if (core::steadyNowNs() >= deadline_ns) return timedOut(who);
        ::poll(nullptr, 0, kBacklogRetryMs);
        continue;
      }
      return connectError(error, pid, path, who);
    }
  }

  Status connectError(int error, pid_t pid, const std::string& path, const std::string& who) {
    if (error == ENOENT) {
      return Status(StatusCode::kNotFound,
                    who +
                        ": no such socket (the program exited, or never loaded the shim with "
                        "FABRIC_CHAOS_VERBS_DIR=" +
                        dir_ + ")",
                    error);
    }
    // Refused: nothing listens on the socket any more. Its program is gone when its pid is (or
    // is a zombie): killed before its shim could remove the socket. A live pid keeps its socket
    // (its program may be in another pid namespace, where this pid is someone else).
    if (error == ECONNREFUSED && !processAlive(pid)) {
      ::unlink(path.c_str());
      return Status(StatusCode::kNotFound,
                    who + ": the program has exited; its stale socket is removed", error);
    }
    return transportError(who, "connect", error);
  }

  Status sendLine(int fd, const std::string& line, const std::string& who, int64_t deadline_ns) {
    for (size_t sent = 0; sent < line.size();) {
      const ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n >= 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return transportError(who, "send", errno);
      FC_RETURN_IF_ERROR(waitFor(fd, POLLOUT, who, deadline_ns));
    }
    return Status::ok();
  }

  core::Result<std::string> readLine(int fd, const std::string& who, int64_t deadline_ns) {
    std::string received;
    char buffer[4096];
    for (;;) {
      const size_t end = received.find('\n');
      if (end != std::string::npos) return received.substr(0, end);
      if (received.size() > kMaxAnswer) {
        return Status(StatusCode::kUnavailable, who + " answered more than " +
                                                    std::to_string(kMaxAnswer) +
                                                    " bytes without ending its line");
      }
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n > 0) {
        received.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n == 0)
        return Status(StatusCode::kUnavailable, who + " closed the connection unanswered");
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return transportError(who, "recv", errno);
      FC_RETURN_IF_ERROR(waitFor(fd, POLLIN, who, deadline_ns));
    }
  }

  Status waitFor(int fd, short events, const std::string& who, int64_t deadline_ns) {
    for (;;) {
      const int64_t left_ns = deadline_ns - core::steadyNowNs();
      if (left_ns <= 0) return timedOut(who);
      pollfd entry{fd, events, 0};
      const int ready = ::poll(&entry, 1, static_cast<int>((left_ns + 999'999) / 1'000'000));
      if (ready > 0) return Status::ok();  // readiness or an error the next call reports
      if (ready < 0 && errno != EINTR) return transportError(who, "poll", errno);
    }
  }

  Status timedOut(const std::string& who) const {
    return Status(StatusCode::kTimeout,
                  who + " did not answer within " + std::to_string(deadline_ms_) + " ms");
  }

  static Status transportError(const std::string& who, const char* call, int error) {
    return Status(StatusCode::kUnavailable, who + ": " + call + ": " + std::strerror(error), error);
  }

  const std::string dir_;
  const int deadline_ms_;
};

}  // namespace

std::string armRequestLine(const verbs_shim::ArmRequest& request) {
  json faults = json::array();
  for (const verbs_shim::ShimFault& fault : request.faults) faults.push_back(toJson(fault));
  return json{{"arm", std::move(faults)}, {"lease_ms", request.lease_ms}, {"seed", request.seed}}
      .dump();
}

std::unique_ptr<VerbsShimChannel> makeVerbsShimChannel(std::string dir, int deadline_ms) {
  return std::make_unique<SocketVerbsShimChannel>(std::move(dir), deadline_ms);
}

}  // namespace fabric_chaos::sys
