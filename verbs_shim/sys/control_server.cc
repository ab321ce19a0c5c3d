#include "verbs_shim/sys/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace fabric_chaos::verbs_shim {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

constexpr int kMaxClients = 8;
constexpr int kPollSliceMs = 100;  // how soon a lease's end or a stop is noticed
constexpr size_t kMaxLine = 1 << 20;

struct Client {
  int fd = -1;
  std::string pending;
};

}  // namespace

struct ControlServer::State {
  std::string path;
  ControlHandler* handler = nullptr;
  int listen_fd = -1;
  int stop_pipe[2] = {-1, -1};
  std::thread thread;
  std::vector<Client> clients;
  bool armed = false;
  int64_t lease_ms = 0;
  int64_t lease_end_ns = 0;

  json handle(const std::string& line) {
    auto request = parseControlRequest(line);
    if (!request.isOk()) return controlError(request.status().message());
    if (const auto* arm = std::get_if<ArmRequest>(&*request)) {
      handler->arm(*arm);
      armed = true;
      lease_ms = arm->lease_ms;
      lease_end_ns = core::steadyNowNs() + lease_ms * 1'000'000;
      return {{"ok", true}, {"armed", arm->faults.size()}, {"lease_ms", lease_ms}};
    }
    if (std::holds_alternative<RenewRequest>(*request)) {
      if (!armed) return controlError("nothing is armed: the lease ran out or was never taken");
      lease_end_ns = core::steadyNowNs() + lease_ms * 1'000'000;
      return {{"ok", true}, {"lease_ms", lease_ms}};
    }
    if (std::holds_alternative<DisarmRequest>(*request)) {
      handler->disarm();
      armed = false;
      return {{"ok", true}};
    }
    json answer = {{"ok", true}, {"pid", getpid()}};
    answer.update(handler->statusMembers());
    return answer;
  }

  // False when the client is gone or misbehaves (then it is closed).
  bool serve(Client& client) {
    char buffer[4096];
    const ssize_t got = recv(client.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (got < 0) return true;
    client.pending.append(buffer, static_cast<size_t>(got));
    if (client.pending.size() > kMaxLine) return false;
    for (size_t end; (end = client.pending.find('\n')) != std::string::npos;) {
      const std::string line = client.pending.substr(0, end);
      client.pending.erase(0, end + 1);
      const std::string answer = handle(line).dump() + "\n";
      // Never blocks: an agent that stops reading loses its connection, not the program.
      if (send(client.fd, answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL) !=
          static_cast<ssize_t>(answer.size())) {
        return false;
      }
    }
    return true;
  }

  void run() {
    for (;;) {
      std::vector<pollfd> fds = {{stop_pipe[0], POLLIN, 0}, {listen_fd, POLLIN, 0}};
      for (const Client& c : clients) fds.push_back({c.fd, POLLIN, 0});
      poll(fds.data(), fds.size(), kPollSliceMs);
      if (fds[0].revents != 0) return;
      if (armed && core::steadyNowNs() >= lease_end_ns) {
        handler->disarm();  // the agent did not renew in time
        armed = false;
      }
      if ((fds[1].revents & POLLIN) != 0) {
        const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0 && static_cast<int>(clients.size()) < kMaxClients) {
          clients.push_back({fd, ""});
        } else if (fd >= 0) {
          close(fd);
        }
      }
      for (size_t i = 0; i < clients.size();) {
        const short revents = fds.size() > i + 2 ? fds[i + 2].revents : 0;
        if (revents != 0 && !serve(clients[i])) {
          close(clients[i].fd);
          clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
          fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i + 2));
          continue;
        }
        ++i;
      }
    }
  }
};

std::string controlSocketPath(const std::string& dir, pid_t pid) {
  return dir + "/verbs-" + std::to_string(pid) + ".sock";
}

core::Result<std::unique_ptr<ControlServer>> ControlServer::start(const std::string& dir,
                                                                  ControlHandler& handler) {
  auto state = std::make_unique<State>();
  state->path = controlSocketPath(dir, getpid());
  state->handler = &handler;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (state->path.size() >= sizeof(address.sun_path)) {
    return Status(StatusCode::kUnavailable, "control socket path too long: " + state->path);
  }
  std::memcpy(address.sun_path, state->path.c_str(), state->path.size() + 1);
  state->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (state->listen_fd < 0) {
    return Status(StatusCode::kUnavailable, "socket for " + state->path, errno);
  }
  unlink(state->path.c_str());  // a stale socket of an earlier process with this pid
  const mode_t old_mask = umask(0077);
  const int bound =
      bind(state->listen_fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  umask(old_mask);
  if (bound != 0 || chmod(state->path.c_str(), 0600) != 0 ||
      listen(state->listen_fd, kMaxClients) != 0 || pipe2(state->stop_pipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(state->listen_fd);
    return Status(StatusCode::kUnavailable, "cannot serve " + state->path, error);
  }
  State* raw = state.get();
  state->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(state)));
}

ControlServer::ControlServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

ControlServer::~ControlServer() {
  const char stop = 'x';
  if (write(state_->stop_pipe[1], &stop, 1) != 1) {
    // The thread still ends at process exit; nothing else to do here.
  }
  if (state_->thread.joinable()) state_->thread.join();
  if (state_->armed) state_->handler->disarm();
  for (const Client& c : state_->clients) close(c.fd);
  close(state_->listen_fd);
  close(state_->stop_pipe[0]);
  close(state_->stop_pipe[1]);
  unlink(state_->path.c_str());
}

const std::string& ControlServer::path() const { return state_->path; }

}  // namespace fabric_chaos::verbs_shim
