// `fabric-chaos pfc-switch`: the PFC agent of a lab switch (docs/lab.md, "PFC"). Runs inside the
// switch's namespace (`lab up --pfc` starts one per switch, detached, and `lab down` stops it):
// it receives the 802.1Qbb frames each port gets (a packet socket sees them before the bridge
// drops them), pauses that port's egress for the frame's priorities through the PFC gate
// (injectors/sys/pfc_gate.h), and sends the held frames back out when the pause ends. What to do
// is lab/pfc_switch_model.h; this file wires it to the sockets, the gate, the clock and signals,
// and writes the counters to a JSON file (--stats) a few times a second.

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
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli.h"
#include "app/stop_signals.h"
#include "core/clock.h"
#include "injectors/pfc/pfc_frame.h"
#include "injectors/sys/pfc_gate.h"
#include "injectors/sys/raw_packets.h"
#include "lab/frame_checksum.h"
#include "lab/pfc_switch_model.h"
#include "lab/pfc_watchdog.h"

namespace fabric_chaos::app {
namespace {

constexpr char kUsage[] =
    "usage: fabric-chaos pfc-switch --ports P[,P...] --rate-bps R --buffer-bytes B\n"
    "                               [--lossless-dscp D[,D]] [--lossless-priority 3]\n"
    "                               [--pfc-enabled PORT=MASK[,PORT=MASK]] [--stats FILE]\n"
    "                               [--netns-file /run/netns/NAME] [--pid-file FILE]\n"
    "                               [--watchdog ACTION[:DETECT_MS[:RESTORE_MS]]]\n"
    "                               [--daemon [--log FILE]]\n"
    "The PFC agent of a lab switch: run inside the switch's namespace. Pauses a port's egress for\n"
    "the priorities of each 802.1Qbb frame the port receives, for quanta x 512 bit times at R,\n"
    "holding the paused frames (up to B bytes per port and priority) and sending them when the\n"
    "pause ends. The lossless DSCPs (default 26) have --lossless-priority, everything else 0.\n"
    "--pfc-enabled: the priorities a port honours (hex mask; default all). --stats: the counters\n"
    "as JSON, rewritten every 200 ms. --netns-file: exit when that namespace is deleted.\n"
    "--watchdog: a PFC watchdog as SONiC's pfcwd (drop, forward or alert; 200 ms detection and\n"
    "restoration by default): a priority paused for the detection time is in a storm.\n"
    "--daemon: detach once running (the parent exits 0 when the gate is attached), its output\n"
    "then going to --log (default: nowhere).\n";

// Reused by the kernel for frames the agent sends back; "fc" in the high bytes.
constexpr uint32_t kReinjectMark = 0xfc0f0c01;
// The gate keeps holding this long past a pause's end, while the agent sends the held frames.
constexpr int64_t kHoldGraceNs = 20'000'000;
constexpr int64_t kStatsPeriodNs = 200'000'000;

std::atomic<bool> g_stop{false};
void requestStop(int) { g_stop = true; }

// CLOCK_MONOTONIC, the clock of the gate's bpf_ktime_get_ns().
int64_t monotonicNs() { return core::steadyNowNs(); }

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct Options {
  std::vector<std::string> ports;
  int64_t rate_bps = 0;
  int64_t buffer_bytes = 0;
  uint64_t lossless_dscp_mask = uint64_t{1} << 26;
  int lossless_priority = 3;
  std::map<std::string, uint8_t> pfc_enabled;
  std::string stats_path;
  std::string netns_file;
  std::string pid_path;
  std::string log_path;
  std::optional<lab::PfcWatchdogConfig> watchdog;
  bool daemon = false;
};

core::Result<Options> parseOptions(int argc, char** argv) {
  const core::FlagRules rules{
      {"ports", "rate-bps", "buffer-bytes", "lossless-dscp", "lossless-priority", "pfc-enabled",
       "stats", "netns-file", "pid-file", "log", "watchdog"},
      {"daemon", "help"},
      false};
  const Flags flags = parseFlags(argc, argv, rules);
  if (!flags.error.empty()) return core::Status(core::StatusCode::kInvalidArgument, flags.error);
  Options o;
  o.ports = splitList(flags.getOr("ports", ""));
  if (o.ports.empty())
    return core::Status(core::StatusCode::kInvalidArgument, "--ports is required");
  auto rate =
      core::parseFlagInteger("--rate-bps", flags.getOr("rate-bps", ""), 1'000'000, 100'000'000'000);
  if (!rate.isOk()) return rate.status();
  o.rate_bps = *rate;
  auto buffer = core::parseFlagInteger("--buffer-bytes", flags.getOr("buffer-bytes", ""), 1514,
                                       int64_t{64} << 20);
  if (!buffer.isOk()) return buffer.status();
  o.buffer_bytes = *buffer;
  if (auto dscps = flags.get("lossless-dscp")) {
    o.lossless_dscp_mask = 0;
    for (const std::string& d : splitList(*dscps)) {
      auto dscp = core::parseFlagInteger("--lossless-dscp", d, 0, 63);
      if (!dscp.isOk()) return dscp.status();
      o.lossless_dscp_mask |= uint64_t{1} << *dscp;
    }
  }
  if (auto priority = flags.get("lossless-priority")) {
    auto p = core::parseFlagInteger("--lossless-priority", *priority, 0, 7);
    if (!p.isOk()) return p.status();
    o.lossless_priority = static_cast<int>(*p);
  }
  for (const std::string& item : splitList(flags.getOr("pfc-enabled", ""))) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "--pfc-enabled expects PORT=MASK, got \"" + item + "\"");
    }
    char* end = nullptr;
    const std::string mask_text = item.substr(eq + 1);
    const unsigned long mask = std::strtoul(mask_text.c_str(), &end, 0);
    if (mask_text.empty() || *end != '\0' || mask > 0xff) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "--pfc-enabled: the mask of " + item.substr(0, eq) +
                              " must be 0 to 0xff, got \"" + mask_text + "\"");
    }
    o.pfc_enabled[item.substr(0, eq)] = static_cast<uint8_t>(mask);
  }
  o.stats_path = flags.getOr("stats", "");
  o.netns_file = flags.getOr("netns-file", "");
  o.pid_path = flags.getOr("pid-file", "");
  o.log_path = flags.getOr("log", "");
  if (auto watchdog = flags.get("watchdog")) {
    auto config = lab::parsePfcWatchdog(*watchdog);
    if (!config.isOk()) return config.status();
    o.watchdog = *config;
  }
  o.daemon = flags.has("daemon");
  return o;
}

// The device and inode of a namespace file, to notice that `ip netns del` removed it.
std::optional<std::pair<dev_t, ino_t>> namespaceIdentity(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

nlohmann::json statsJson(const lab::PfcSwitchModel& model, sys::PfcGate& gate, int64_t now_ns,
                         uint64_t send_failures) {
  nlohmann::json ports = nlohmann::json::object();
  for (size_t i = 0; i < model.ports().size(); ++i) {
    const lab::PfcPortCounters c = model.counters(i, now_ns);
    nlohmann::json port;
    nlohmann::json paused = nlohmann::json::array();
    auto gate_counts = gate.counts(model.ports()[i].ifindex);
    for (int p = 0; p < lab::kPfcPriorityCount; ++p) {
      const std::string prio = "prio" + std::to_string(p);
      port["rx_" + prio + "_pause"] = c.rx_pause[p];
      port["rx_" + prio + "_pause_duration"] = c.rx_pause_duration_us[p];
      port["tx_" + prio + "_pause"] = 0;  // the model does not propagate pauses
      port["rx_" + prio + "_pause_ignored"] = c.rx_pause_ignored[p];
      port[prio + "_held_frames"] = c.held_frames[p];
      port[prio + "_released_frames"] = c.released_frames[p];
      uint64_t dropped = c.dropped_frames[p];
      if (gate_counts.isOk()) {
        dropped += gate_counts->dropped_no_room[p] + gate_counts->dropped_oversize[p];
      }
      port[prio + "_pause_dropped_frames"] = dropped;
      if (model.watchdog()) {
        // SONiC's pfcwd queue counters, and when (CLOCK_MONOTONIC ns) it last acted.
        port["pfcwd_" + prio + "_storm_detected"] = c.storms_detected[p];
        port["pfcwd_" + prio + "_storm_restored"] = c.storms_restored[p];
        port["pfcwd_" + prio + "_dropped_frames"] = c.watchdog_dropped_frames[p];
        port["pfcwd_" + prio + "_last_detected_ns"] = c.last_detected_ns[p];
        port["pfcwd_" + prio + "_last_restored_ns"] = c.last_restored_ns[p];
      }
      if (model.paused(i, p)) paused.push_back(p);
    }
    port["paused_priorities"] = paused;
    nlohmann::json storms = nlohmann::json::array();
    for (int p = 0; p < lab::kPfcPriorityCount; ++p) {
      if (model.inStorm(i, p)) storms.push_back(p);
    }
    port["storm_priorities"] = storms;
    port["pfc_enabled"] = model.ports()[i].pfc_enabled;
    ports[model.ports()[i].name] = port;
  }
  nlohmann::json out = {
      {"monotonic_ns", now_ns}, {"ports", ports}, {"send_failures", send_failures}};
  if (model.watchdog()) out["watchdog"] = lab::formatPfcWatchdog(*model.watchdog());
  return out;
}

void writeStats(const std::string& path, const nlohmann::json& stats) {
  if (path.empty()) return;
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << stats.dump() << "\n";
    if (!out) return;
  }
  std::rename(temporary.c_str(), path.c_str());
}

class Agent {
 public:
  Agent(lab::PfcSwitchModel& model, sys::PfcGate& gate) : model_(model), gate_(gate) {}

  void onPauseFrame(size_t port, const injectors::PfcPause& pause) {
    for (const lab::HoldChange& change : model_.onPauseFrame(port, pause, monotonicNs())) {
      report(
          gate_.holdUntil(model_.ports()[change.port].ifindex, change.priority, change.until_ns));
    }
  }

  // Takes what the gate held, then sends what is due and opens the gates of ended pauses,
  // until nothing the gate held waits behind an open gate.
  void settle() {
    for (int round = 0; round < 16; ++round) {
      takeHeld();
      std::vector<lab::HoldChange> opened;
      std::vector<lab::Release> releases = model_.due(monotonicNs(), opened);
      if (releases.empty() && opened.empty()) return;
      send(releases);
      for (const lab::HoldChange& change : opened) {
        report(
            gate_.holdUntil(model_.ports()[change.port].ifindex, change.priority, change.until_ns));
      }
    }
  }

  // Nothing stays held: every gate open, every queued frame sent, whatever its pause.
  void releaseEverything() {
    for (const lab::PfcPortSpec& port : model_.ports()) {
      for (int p = 0; p < lab::kPfcPriorityCount; ++p) report(gate_.holdUntil(port.ifindex, p, 0));
    }
    settle();
    send(model_.releaseAll());
  }

  uint64_t sendFailures() const { return send_failures_; }

 private:
  // Held frames back out of their ports, their transport checksums completed first.
  void send(std::vector<lab::Release> releases) {
    for (lab::Release& release : releases) {
      const int ifindex = model_.ports()[release.port].ifindex;
      for (std::vector<uint8_t>& frame : release.frames) {
        lab::completeTransportChecksum(frame);
        if (!gate_.send(ifindex, frame).isOk()) ++send_failures_;
      }
    }
  }

  void takeHeld() {
    auto held = gate_.takeHeld();
    if (!held.isOk()) {
      report(held.status());
      return;
    }
    for (sys::HeldFrame& frame : *held) {
      if (auto port = model_.portOf(frame.ifindex)) {
        model_.onHeld(*port, frame.priority, std::move(frame.bytes));
      }
    }
  }

  void report(const core::Status& status) {
    if (status.isOk() || status.message() == last_error_) return;
    last_error_ = status.message();
    std::fprintf(stderr, "fabric-chaos pfc-switch: %s\n", status.toString().c_str());
  }

  lab::PfcSwitchModel& model_;
  sys::PfcGate& gate_;
  uint64_t send_failures_ = 0;
  std::string last_error_;
};

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
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  auto parsed = parseOptions(argc - 1, argv + 1);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "fabric-chaos pfc-switch: %s\n\n%s", parsed.status().message().c_str(),
                 kUsage);
    return 2;
  }
  const Options& o = *parsed;
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
  signal(SIGHUP, SIG_IGN);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // resume within microseconds of the pause's end

  std::vector<std::unique_ptr<sys::RawPacketReceiver>> receivers;
  std::vector<lab::PfcPortSpec> specs;
  for (const std::string& port : o.ports) {
    auto receiver = sys::openRawPacketReceiver(port, injectors::kMacControlEthertype);
    if (!receiver.isOk()) {
      std::fprintf(stderr, "fabric-chaos pfc-switch: cannot receive on %s: %s\n", port.c_str(),
                   receiver.status().toString().c_str());
      tellParent(1);
      return 1;
    }
    auto enabled = o.pfc_enabled.find(port);
    specs.push_back({port, (*receiver)->ifindex(), o.rate_bps, o.buffer_bytes,
                     enabled == o.pfc_enabled.end() ? uint8_t{0xff} : enabled->second});
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
  lab::PfcSwitchModel model(std::move(specs), kHoldGraceNs, o.watchdog);
  Agent agent(model, **gate);
  const auto namespace_at_start = namespaceIdentity(o.netns_file);
  if (!o.pid_path.empty()) {
    std::ofstream(o.pid_path, std::ios::trunc) << ::getpid() << "\n";
  }
  writeStats(o.stats_path, statsJson(model, **gate, monotonicNs(), 0));
  tellParent(0);
  std::fprintf(stderr, "fabric-chaos pfc-switch: %zu ports at %lld bit/s, buffer %lld bytes\n",
               o.ports.size(), static_cast<long long>(o.rate_bps),
               static_cast<long long>(o.buffer_bytes));
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
    if (auto deadline = model.nextDeadline()) wake = std::min(wake, *deadline);
    const int64_t wait_ns = std::max<int64_t>(0, wake - now);
    timespec timeout{wait_ns / 1'000'000'000, wait_ns % 1'000'000'000};
    const int ready = ::ppoll(fds.data(), fds.size(), &timeout, nullptr);
    if (ready < 0 && errno != EINTR) break;
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
          agent.onPauseFrame(i, *pause);
        }
      }
    }
    agent.settle();
    if (monotonicNs() >= next_stats_ns) {
      next_stats_ns = monotonicNs() + kStatsPeriodNs;
      writeStats(o.stats_path, statsJson(model, **gate, monotonicNs(), agent.sendFailures()));
      // The lab was taken down around us: a namespace we hold open would outlive it unseen.
      if (!o.netns_file.empty() && namespaceIdentity(o.netns_file) != namespace_at_start) {
        std::fprintf(stderr, "fabric-chaos pfc-switch: %s is gone; stopping\n",
                     o.netns_file.c_str());
        break;
      }
    }
  }
  // Nothing stays held; then the filters come off.
  agent.releaseEverything();
  writeStats(o.stats_path, statsJson(model, **gate, monotonicNs(), agent.sendFailures()));
  for (const std::string& port : o.ports) (void)sys::detachPfcGate(port);
  if (!o.pid_path.empty()) std::remove(o.pid_path.c_str());
  return exit_code;
}

}  // namespace fabric_chaos::app
