#include "injectors/sys/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "core/clock.h"

extern char** environ;

namespace fabric_chaos::sys {
namespace {

class PosixCommandRunner : public CommandRunner {
 public:
  core::Result<CommandResult> run(const std::vector<std::string>& argv, int timeout_ms) override {
    if (argv.empty()) return core::Status(core::StatusCode::kInvalidArgument, "empty command");
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return core::errnoStatus(errno, "pipe");
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      int saved = errno;
      close(out_pipe[0]);
      close(out_pipe[1]);
      return core::errnoStatus(saved, "pipe");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    // Nothing else this process holds reaches the command: a daemon it starts (the lab's BIRD)
    // would otherwise keep a caller's descriptors open for its whole life: a listening socket,
    // or a lock file held with flock(1) that then never frees.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);

    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    pid_t pid = 0;
    int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      return core::errnoStatus(rc, "cannot start " + argv[0]);
    }

    CommandResult result;
    const int64_t deadline = core::steadyNowNs() + int64_t{timeout_ms} * 1000000;
    bool timed_out = false;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    char buffer[4096];
    while (open_fds > 0) {
      const int64_t left_ms = (deadline - core::steadyNowNs()) / 1000000;
      if (left_ms <= 0) {
        timed_out = true;
        kill(pid, SIGKILL);
        break;
      }
      int ready = poll(fds, 2, static_cast<int>(left_ms));
      if (ready < 0 && errno == EINTR) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
        if (n > 0) {
          (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    for (auto& fd : fds) {
      if (fd.fd >= 0) close(fd.fd);
    }
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
      return core::Status(core::StatusCode::kTimeout, joinArgv(argv) + " did not finish within " +
                                                          std::to_string(timeout_ms) + " ms");
    }
    result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    return result;
  }
};

}  // namespace

std::unique_ptr<CommandRunner> makeCommandRunner() {
  return std::make_unique<PosixCommandRunner>();
}

std::string joinArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    out += arg;
  }
  return out;
}

}  // namespace fabric_chaos::sys
