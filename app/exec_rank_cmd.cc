// `fabric-chaos exec-rank`: one rank of an external workload (docs/workloads.md). Runs the user's
// command, reads its stdout and stderr, and speaks the rank line protocol (workload/report.h) to
// the agent on its own stdout. What a line means is workload/exec_rank.h's; this file wires the
// child process, the pipes, the clock and the signals. `fabric-chaos workload-script NAME`
// prints a shipped script.

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "app/cli.h"
#include "app/stop_signals.h"
#include "app/workload_scripts.h"
#include "core/clock.h"
#include "core/line_reader.h"
#include "injectors/sys/process.h"
#include "workload/exec_rank_options.h"
#include "workload/slurm/srun_output.h"

namespace fabric_chaos::app {
namespace {

std::atomic<bool> g_exec_stop_requested{false};
void requestExecStop(int) { g_exec_stop_requested = true; }

// How long the command gets to end after SIGTERM before SIGKILL: shorter than the agent's own
// grace for this process, so that its done line still reaches the agent.
constexpr int64_t kCommandGraceMs = 3000;
constexpr int kPollSliceMs = 50;

// A report line on stdout, framed when it is longer than max_bytes (0: never).
void printLine(const std::string& line, size_t max_bytes) {
  for (const std::string& piece : workload::frameLine(line, max_bytes)) {
    std::fputs(piece.c_str(), stdout);
    std::fputc('\n', stdout);
  }
  std::fflush(stdout);
}

// A shipped script in an anonymous file, named by a /proc path the command can open: nothing
// lands on disk, and nothing is left behind when the rank is killed.
core::Result<std::string> materializeScript(const std::string& name, int& fd) {
  const auto text = shippedScript(name);
  if (!text) {
    return core::Status(core::StatusCode::kInvalidArgument, "no shipped script named " + name);
  }
  fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return core::errnoStatus(errno, "cannot create a memory file for " + name);
  size_t written = 0;
  while (written < text->size()) {
    const ssize_t n = ::write(fd, text->data() + written, text->size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return core::errnoStatus(errno, "cannot write the script " + name);
    written += static_cast<size_t>(n);
  }
  return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd);
}

std::string exitMessage(int code) {
  if (code > 128) return "the command was killed by signal " + std::to_string(code - 128);
  return "the command exited with code " + std::to_string(code);
}

}  // namespace

int workloadScriptMain(int argc, char** argv) {
  const std::string name = argc > 1 ? argv[1] : "";
  const auto text = shippedScript(name);
  if (!text) {
    std::string names;
    for (const std::string& n : shippedScriptNames()) names += (names.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "usage: fabric-chaos workload-script NAME (one of: %s)\n", names.c_str());
    return 2;
  }
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

int execRankMain(int argc, char** argv) {
  installStopHandlers(requestExecStop);
  signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args = core::commandLineArgs(argc, argv, 1);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << workload::execRankUsage();
    return 0;
  }
  auto parsed = workload::parseExecRankArgs(args);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "fabric-chaos exec-rank: %s\n\n%s", parsed.status().message().c_str(),
                 workload::execRankUsage().c_str());
    return 2;
  }
  const workload::ExecRankCommand& command = parsed.value();
  auto parser = workload::makeStepParser(command.parser);
  const size_t max_line_bytes = command.max_line_bytes;
  workload::ExecRankReporter reporter(
      command.rank, std::move(parser.value()),
      [max_line_bytes](const std::string& line) { printLine(line, max_line_bytes); });
  // Every time this rank reports is on this clock (ExecRankCommand::wall_clock).
  const auto now = command.wall_clock ? core::wallNowNs : core::steadyNowNs;
  auto fail = [&](const core::Status& status) {
    return reporter.finish(workload::ExecRankEnd::kStartFailed, 127, status.message(), now());
  };

  int script_fd = -1;
  std::string script_path;
  if (!command.script.empty()) {
    auto path = materializeScript(command.script, script_fd);
    if (!path.isOk()) return fail(path.status());
    script_path = path.value();
  }
  sys::SpawnSpec spawn;
  spawn.argv = workload::execRankArgv(command, script_path);
  spawn.capture_stdout = true;
  spawn.capture_stderr = true;
  spawn.own_process_group = true;  // a shell's children end with it, and release the pipes
  auto launcher = sys::makeForkExecLauncher();
  auto child = launcher->spawn(spawn);
  if (!child.isOk()) return fail(child.status());
  const int64_t wall_minus_steady = core::wallNowNs() - core::steadyNowNs();
  reporter.started(now(), command.wall_clock
                              ? workload::ExecRankReporter::ClockOffsets{wall_minus_steady, 0}
                              : workload::ExecRankReporter::ClockOffsets{0, -wall_minus_steady});

  core::LineReader out_reader, err_reader;
  bool out_open = true, err_open = true;
  bool silent = false;
  int64_t term_sent_ns = 0;
  std::optional<int> leader_exit;  // the command's own exit code, once it has exited
  int64_t leader_exit_ns = 0;
  auto onStdout = [&](const std::string& line) { reporter.stdoutLine(line, now()); };
  auto onStderr = [&](const std::string& line) {
    reporter.stderrLine(line);
    std::fprintf(stderr, "%s\n", line.c_str());  // the agent keeps it in the rank's log
  };
  while (out_open || err_open) {
    pollfd fds[2] = {{out_open ? child.value()->stdoutFd() : -1, POLLIN, 0},
                     {err_open ? child.value()->stderrFd() : -1, POLLIN, 0}};
    const int ready = ::poll(fds, 2, kPollSliceMs);
    if (ready > 0) {
      if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        out_open = !out_reader.readFrom(fds[0].fd, onStdout);
      }
      if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        err_open = !err_reader.readFrom(fds[1].fd, onStderr);
      }
    }
    const int64_t now_ns = now();
    if (!leader_exit) {
      if (auto code = child.value()->wait(0); code.isOk()) {
        leader_exit = code.value();
        leader_exit_ns = now_ns;
      }
    } else if (now_ns - leader_exit_ns > kCommandGraceMs * 1'000'000) {
      // The command is gone but something it started still holds its output open.
      (void)child.value()->signal(SIGKILL);
    }
    if (!silent && !g_exec_stop_requested && reporter.tick(now_ns)) {
      silent = true;  // hung: it gets no grace to finish a step it will not finish
      (void)child.value()->signal(SIGKILL);
    }
    if (g_exec_stop_requested && term_sent_ns == 0) {
      term_sent_ns = now_ns;
      (void)child.value()->signal(SIGTERM);
    } else if (term_sent_ns != 0 && now_ns - term_sent_ns > kCommandGraceMs * 1'000'000) {
      (void)child.value()->signal(SIGKILL);
    }
  }
  // Both pipes closed: the command (and whatever it started that shared them) is gone or going.
  auto code = leader_exit ? core::Result<int>(*leader_exit)
                          : child.value()->wait(static_cast<int>(kCommandGraceMs));
  if (!code.isOk()) {
    (void)child.value()->signal(SIGKILL);
    code = child.value()->wait(-1);
  }
  const int exit_code = code.isOk() ? code.value() : 128 + SIGKILL;
  if (script_fd >= 0) ::close(script_fd);
  const int64_t end_ns = now();
  if (silent) {
    return reporter.finish(workload::ExecRankEnd::kSilent, exit_code,
                           "no step for " + std::to_string(command.rank.silence_ms) +
                               " ms after step " + std::to_string(reporter.nextIteration() - 1) +
                               ": the job hung, and was killed",
                           end_ns);
  }
  if (g_exec_stop_requested) {
    return reporter.finish(workload::ExecRankEnd::kStopped, exit_code, "", end_ns);
  }
  return reporter.finish(workload::ExecRankEnd::kExited, exit_code, exitMessage(exit_code), end_ns);
}

}  // namespace fabric_chaos::app
