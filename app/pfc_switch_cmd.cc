// `fabric-chaos pfc-switch`: the PFC agent of a lab switch (docs/lab.md, "PFC"). Runs inside the
// switch's namespace (`lab up --pfc` starts one per switch, detached, and `lab down` stops it):
// it receives the 802.1Qbb frames each port gets (a packet socket sees them before the bridge
// drops them), pauses that port's egress for the frame's priorities through the PFC gate
// (injectors/sys/pfc_gate.h), sends the held frames back out when the pause ends, and pauses the
// ports feeding a paused queue that fills (pause propagation). What to do is
// lab/pfc_switch_model.h and lab/pfc_propagation.h, done by app/pfc_switch_agent.h; this file
// runs its loop on the sockets, the clock and signals, and writes the counters to a JSON file
// (--stats) a few times a second. The per-port PFC enable
// masks and watchdogs can change while it runs: it reads its --settings file again on SIGHUP
// (injectors/model/pfc_switch_settings.h).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli.h"
#include "app/pfc_switch_agent.h"
#include "app/pfc_switch_options.h"
#include "app/pfc_switch_stats.h"
#include "app/stop_signals.h"
#include "core/clock.h"
#include "core/file_replace.h"
#include "injectors/pfc/pfc_frame.h"
#include "injectors/sys/pfc_gate.h"
#include "injectors/sys/raw_packets.h"
#include "lab/pfc_propagation.h"
#include "lab/pfc_switch_model.h"

namespace fabric_chaos::app {
namespace {

// Reused by the kernel for frames the agent sends back; "fc" in the high bytes.
constexpr uint32_t kReinjectMark = 0xfc0f0c01;
// The gate keeps holding this long past a pause's end, while the agent sends the held frames.
constexpr int64_t kHoldGraceNs = 20'000'000;
constexpr int64_t kStatsPeriodNs = 200'000'000;

std::atomic<bool> g_stop{false};
void requestStop(int) { g_stop = true; }
std::atomic<bool> g_reload{false};
void requestReload(int) { g_reload = true; }

// CLOCK_MONOTONIC, the clock of the gate's bpf_ktime_get_ns().
int64_t monotonicNs() { return core::steadyNowNs(); }

// The device and inode of a namespace file, to notice that `ip netns del` removed it.
std::optional<std::pair<dev_t, ino_t>> namespaceIdentity(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

void writeStats(const std::string& path, const nlohmann::json& stats) {
  if (!path.empty()) (void)core::replaceFileContents(path, stats.dump() + "\n");
}

// Reads the settings file again and applies what changed. A file that cannot be read, parsed or
// that names a port this agent does not have changes nothing: its error is reported instead.
void reloadSettings(const std::string& path, lab::PfcSwitchModel& model, PfcSwitchAgent& agent,
                    PfcSettingsStatus& status) {
  ++status.reads;
  auto settings = injectors::readPfcSwitchSettings(path);
  if (!settings.isOk()) {
    status.error = settings.status().message();
    return;
  }
  std::vector<std::pair<size_t, injectors::PfcPortSettings>> updates;
  for (const auto& [name, port] : settings->ports) {
    size_t index = 0;
    while (index < model.ports().size() && model.ports()[index].name != name) ++index;
    if (index == model.ports().size()) {
      status.error = path + ": ports." + name + ": not a port of this switch";
      return;
    }
    updates.emplace_back(index, port);
  }
  const int64_t now = monotonicNs();
  std::vector<lab::HoldChange> changes;
  for (const auto& [index, port] : updates) {
    const lab::PfcPortSpec& spec = model.ports()[index];
    if (spec.pfc_enabled != port.pfc_enabled) model.setPfcEnabled(index, port.pfc_enabled, now);
    if (spec.watchdog != port.watchdog) model.setWatchdog(index, port.watchdog, now, changes);
  }
  agent.apply(changes);
  status.generation = settings->generation;
  status.error.clear();
}

// Forks; the parent waits for the child's word on a pipe that it is running, and exits with it.
// Returns the pipe's write end in the child (-1 when not daemonising).
int daemonise() {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child > 0) {
    ::close(ready[1]);
    char word = 1;
    const ssize_t got = ::read(ready[0], &word, 1);
    std::_Exit(got == 1 ? word : 1);
  }
  ::close(ready[0]);
  ::setsid();
  return ready[1];
}

}  // namespace

int pfcSwitchMain(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(kPfcSwitchUsage, stdout);
      return 0;
    }
  }
  auto parsed = parsePfcSwitchOptions(argc - 1, argv + 1);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "fabric-chaos pfc-switch: %s\n\n%s", parsed.status().message().c_str(),
                 kPfcSwitchUsage);
    return 2;
  }
  const PfcSwitchOptions& o = *parsed;
  const injectors::PfcSwitchSettings initial = initialPfcSwitchSettings(o);
  const int ready_fd = o.daemon ? daemonise() : -1;
  auto tellParent = [&](char word) {
    if (ready_fd < 0) return;
    if (word == 0) {
      // Running: from now on nothing may hold the starter's pipes open (it waits for their end).
      const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
      const int log_fd =
          o.log_path.empty()
              ? null_fd
              : ::open(o.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(log_fd >= 0 ? log_fd : null_fd, STDOUT_FILENO);
      ::dup2(log_fd >= 0 ? log_fd : null_fd, STDERR_FILENO);
    }
    (void)!::write(ready_fd, &word, 1);
    ::close(ready_fd);
  };

  installStopHandlers(requestStop);
  signal(SIGPIPE, SIG_IGN);
  // SIGHUP (read the settings again) is blocked except while the loop sleeps, so that one sent
  // between a check and the sleep still ends the sleep.
  struct sigaction reload {};
  reload.sa_handler = requestReload;
  sigaction(SIGHUP, &reload, nullptr);
  sigset_t hup;
  sigemptyset(&hup);
  sigaddset(&hup, SIGHUP);
  sigset_t wait_mask;
  sigprocmask(SIG_BLOCK, &hup, &wait_mask);
  sigdelset(&wait_mask, SIGHUP);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // resume within microseconds of the pause's end

  std::vector<std::unique_ptr<sys::RawPacketReceiver>> receivers;
  std::vector<std::unique_ptr<sys::RawPacketSocket>> pfc_senders;
  std::vector<lab::PfcPortSpec> specs;
  for (const std::string& port : o.ports) {
    auto receiver = sys::openRawPacketReceiver(port, injectors::kMacControlEthertype);
    auto sender = sys::openRawPacketSocket(port, 0, /*bypass_qdisc=*/true);
    if (!receiver.isOk() || !sender.isOk()) {
      std::fprintf(stderr, "fabric-chaos pfc-switch: cannot receive and send on %s: %s\n",
                   port.c_str(),
                   (receiver.isOk() ? sender.status() : receiver.status()).toString().c_str());
      tellParent(1);
      return 1;
    }
    pfc_senders.push_back(std::move(*sender));
    const injectors::PfcPortSettings& settings = initial.ports.at(port);
    specs.push_back({port, (*receiver)->ifindex(), o.rate_bps, o.buffer_bytes, settings.pfc_enabled,
                     settings.watchdog});
    receivers.push_back(std::move(*receiver));
  }
  sys::PfcGateConfig gate_config;
  gate_config.lossless_dscp_mask = o.lossless_dscp_mask;
  gate_config.lossless_priority = o.lossless_priority;
  gate_config.reinject_mark = kReinjectMark;
  auto gate = sys::openPfcGate(o.ports, gate_config);
  if (!gate.isOk()) {
    std::fprintf(stderr, "fabric-chaos pfc-switch: %s\n", gate.status().toString().c_str());
    tellParent(1);
    return 1;
  }
  std::vector<int64_t> rates;
  for (const lab::PfcPortSpec& spec : specs) rates.push_back(spec.rate_bps);
  lab::PfcSwitchModel model(std::move(specs), kHoldGraceNs);
  lab::PfcPausePropagation propagation(std::move(rates), {o.xoff_bytes, o.xon_bytes});
  PfcSwitchAgent agent(model, propagation, **gate, std::move(pfc_senders));
  PfcSettingsStatus settings_status;
  if (!o.settings_path.empty()) {
    if (core::Status s = core::replaceFileContents(o.settings_path, toJson(initial).dump(2) + "\n");
        !s.isOk()) {
      std::fprintf(stderr, "fabric-chaos pfc-switch: %s\n", s.toString().c_str());
      tellParent(1);
      return 1;
    }
  }
  const auto namespace_at_start = namespaceIdentity(o.netns_file);
  if (!o.pid_path.empty()) {
    std::ofstream(o.pid_path, std::ios::trunc) << ::getpid() << "\n";
  }
  writeStats(o.stats_path,
             pfcSwitchStatsJson(model, propagation, **gate, monotonicNs(), 0, settings_status));
  tellParent(0);
  std::fprintf(stderr,
               "fabric-chaos pfc-switch: %zu ports at %lld bit/s, buffer %lld bytes, XOFF %lld, "
               "XON %lld\n",
               o.ports.size(), static_cast<long long>(o.rate_bps),
               static_cast<long long>(o.buffer_bytes), static_cast<long long>(o.xoff_bytes),
               static_cast<long long>(o.xon_bytes));
  std::fflush(stderr);

  std::vector<pollfd> fds;
  for (const auto& receiver : receivers) fds.push_back({receiver->fd(), POLLIN, 0});
  fds.push_back({(*gate)->heldFd(), POLLIN, 0});
  int exit_code = 0;
  int64_t next_stats_ns = monotonicNs() + kStatsPeriodNs;
  uint8_t buffer[2048];
  while (!g_stop) {
    const int64_t now = monotonicNs();
    int64_t wake = next_stats_ns;
    if (auto deadline = agent.nextDeadline()) wake = std::min(wake, *deadline);
    const int64_t wait_ns = std::max<int64_t>(0, wake - now);
    timespec timeout{wait_ns / 1'000'000'000, wait_ns % 1'000'000'000};
    const int ready = ::ppoll(fds.data(), fds.size(), &timeout, &wait_mask);
    if (ready < 0 && errno != EINTR) break;
    if (g_reload.exchange(false) && !o.settings_path.empty()) {
      reloadSettings(o.settings_path, model, agent, settings_status);
      next_stats_ns = 0;  // the writer of the settings waits for this generation in the counters
    }
    for (size_t i = 0; ready > 0 && i < receivers.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLERR)) == 0) continue;
      for (;;) {
        auto frame = receivers[i]->receive(buffer, sizeof(buffer));
        if (!frame.isOk()) {
          std::fprintf(stderr, "fabric-chaos pfc-switch: %s; stopping\n",
                       frame.status().toString().c_str());
          g_stop = true;
          exit_code = 1;
          break;
        }
        if (!frame->has_value()) break;
        if ((*frame)->outgoing) continue;
        if (auto pause = injectors::parsePfcFrame(buffer, (*frame)->length)) {
          // 802.1Qbb counts the pause from the frame's arrival, not from when this loop woke
          // (100-150 us later on a busy 2-core machine: a 1.3 ms pause ran 11% long).
          const int64_t now_ns = monotonicNs();
          const int64_t arrival_ns = (*frame)->arrival_ns;
          agent.onPauseFrame(i, *pause,
                             arrival_ns > 0 && arrival_ns <= now_ns ? arrival_ns : now_ns);
        }
      }
    }
    agent.settle(monotonicNs());
    if (monotonicNs() >= next_stats_ns) {
      next_stats_ns = monotonicNs() + kStatsPeriodNs;
      writeStats(o.stats_path, pfcSwitchStatsJson(model, propagation, **gate, monotonicNs(),
                                                  agent.sendFailures(), settings_status));
      // The lab was taken down around us: a namespace we hold open would outlive it unseen.
      if (!o.netns_file.empty() && namespaceIdentity(o.netns_file) != namespace_at_start) {
        std::fprintf(stderr, "fabric-chaos pfc-switch: %s is gone; stopping\n",
                     o.netns_file.c_str());
        break;
      }
    }
  }
  // Nothing stays held; then the filters come off.
  agent.releaseEverything(monotonicNs());
  writeStats(o.stats_path, pfcSwitchStatsJson(model, propagation, **gate, monotonicNs(),
                                              agent.sendFailures(), settings_status));
  for (const std::string& port : o.ports) (void)sys::detachPfcGate(port);
  if (!o.pid_path.empty()) std::remove(o.pid_path.c_str());
  return exit_code;
}

}  // namespace fabric_chaos::app
