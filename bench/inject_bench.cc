// How fast a fault reaches the kernel and whether the engine honours a scenario's timing (issue 9
// §6), side by side in one run. Root only. It builds namespaces fcb-sw0 (bridge br0, ports
// p0..p15) and fcb-peer (the veths' other ends), first removing any fcb-* namespace a crashed run
// left, and on every exit (an error or Ctrl-C included) removes them and its temporary directory.
//  1. One apply+revert (link down, then up) through the product's netlink adapter against the same
//     change by fork/exec of `ip -n NS link set DEV down|up`; packet_loss's nftables backend
//     against `nft -f` of the same rule set.
//  2. A 10 ms / 10 ms link_flap (count 100) run by the real Engine, with an on-disk WAL store, the
//     real local agent behind serve's own guard and a synthetic workload instead of ranks. An
//     independent RTNLGRP_LINK monitor in the switch namespace sees each IFF_UP change; its
//     CLOCK_MONOTONIC receipt times are lined up with the run's clock_origin_steady_ns and each
//     fault event's scheduled_ms.
//  3. One step whose label selector resolves to 16 switch ports, 20 phases of 50 / 50 ms: the skew
//     between the ports per instant.
// Prints the figures and whether each target is met; exits non-zero only when it cannot set up.
// Run: flock /tmp/fc-fabric.lock ./build/bench/inject_bench

#include <dirent.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/local_stack.h"
#include "core/log.h"
#include "core/steady_clock.h"
#include "lab/fabric_catalog.h"
#include "lab/lab_common.h"
#include "scenarios/engine/engine.h"
#include "store/store.h"

extern char** environ;

namespace fabric_chaos::bench {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

constexpr const char* kPrefix = "fcb-";
constexpr const char* kSwitchNs = "fcb-sw0";
constexpr const char* kPeerNs = "fcb-peer";
constexpr const char* kFabricName = "fcb-bench";
constexpr int kPorts = 16;
constexpr int kLinkPairs = 200;  // part 1: apply+revert pairs per method
constexpr int kNftPairs = 50;
constexpr int kWarmup = 10;
constexpr double kPhaseTargetP99Ms = 2.0;
constexpr double kSkewTargetP99Ms = 5.0;
constexpr int kSamplePeriodMs = 5;   // synthetic workload: one sample per rank this often,
constexpr int kSampleFlushMs = 100;  // handed over in batches, as a rank's --flush-ms does

double msBetween(int64_t from_ns, int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e6;
}

// ---- processes and namespaces ----

// PATH first, then where Debian keeps iproute2 and nft (root's PATH may lack sbin).
std::string findTool(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    const std::string p(path);
    for (size_t start = 0; start <= p.size();) {
      const size_t end = std::min(p.find(':', start), p.size());
      if (end > start) dirs.push_back(p.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.push_back(dir);
  for (const auto& dir : dirs) {
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs argv (argv[0] a path, no shell) to completion: its exit status, 128+signal when killed, -1
// when it could not start. The child gets an empty signal mask (ours blocks the stop signals).
int spawnWait(const std::vector<std::string>& argv, bool quiet = false) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return -1;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> ownNamespaces() {
  std::vector<std::string> names;
  if (DIR* dir = ::opendir("/run/netns")) {
    while (dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.rfind(kPrefix, 0) == 0) names.push_back(name);
    }
    ::closedir(dir);
  }
  return names;
}

// Everything this run creates (fcb-* namespaces, the temporary directory), removed exactly once:
// at the end, on an error or from the signal thread.
class Scratch {
 public:
  explicit Scratch(std::string ip) : ip_(std::move(ip)) {}
  ~Scratch() { removeAll(); }

  void setDir(const std::string& dir) {
    std::lock_guard lock(mu_);
    dir_ = dir;
  }
  void removeAll() {
    std::lock_guard lock(mu_);
    for (const auto& ns : ownNamespaces()) spawnWait({ip_, "netns", "del", ns}, true);
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

 private:
  std::string ip_;
  std::mutex mu_;
  std::string dir_;
};

Status ipOrFail(const std::string& ip, std::vector<std::string> args) {
  args.insert(args.begin(), ip);
  const int rc = spawnWait(args);
  if (rc == 0) return Status::ok();
  std::string text;
  for (const auto& a : args) text += (text.empty() ? "" : " ") + a;
  return Status(StatusCode::kInternal, "`" + text + "` failed (exit " + std::to_string(rc) + ")");
}

// fcb-sw0: lo, br0 (STP off, forward delay 0, as the lab makes it) and ports p0..p15 enslaved and
// up; fcb-peer: each port's veth peer e0..e15, up.
Status buildFabric(const std::string& ip) {
  FC_RETURN_IF_ERROR(ipOrFail(ip, {"netns", "add", kSwitchNs}));
  FC_RETURN_IF_ERROR(ipOrFail(ip, {"netns", "add", kPeerNs}));
  FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kSwitchNs, "link", "set", "lo", "up"}));
  FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kSwitchNs, "link", "add", "br0", "type", "bridge",
                                   "stp_state", "0", "forward_delay", "0", "mcast_snooping", "0"}));
  FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kSwitchNs, "link", "set", "br0", "up"}));
  for (int i = 0; i < kPorts; ++i) {
    const std::string port = "p" + std::to_string(i);
    const std::string peer = "e" + std::to_string(i);
    FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kSwitchNs, "link", "add", port, "type", "veth", "peer",
                                     "name", peer, "netns", kPeerNs}));
    FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kSwitchNs, "link", "set", port, "master", "br0"}));
    FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kSwitchNs, "link", "set", port, "up"}));
    FC_RETURN_IF_ERROR(ipOrFail(ip, {"-n", kPeerNs, "link", "set", peer, "up"}));
  }
  return Status::ok();
}

// The fabric the engine sees: 16 hosts whose first links end on ports p0..p15 of sw0. The hosts'
// own namespace is never entered (the workload is synthetic, faults are switch-side).
scenarios::Fabric describeFabric() {
  scenarios::Fabric fabric;
  fabric.name = kFabricName;
  fabric.kind = "netns";
  scenarios::Switch sw;
  sw.name = "sw0";
  sw.netns = kSwitchNs;
  sw.bridge = "br0";
  sw.labels = {{"role", "leaf"}};
  for (int i = 0; i < kPorts; ++i) {
    scenarios::Host host;
    host.name = "h" + std::to_string(i);
    host.netns = kPeerNs;
    host.agent = "local";
    host.nics.push_back({"e" + std::to_string(i), "10.201.0." + std::to_string(i + 1)});
    host.labels = {{"rack", "r" + std::to_string(i / 2)}, {"leaf", "sw0"}, {"bench", "flap16"}};
    const std::string port = "p" + std::to_string(i);
    sw.ports.push_back(port);
    fabric.links.push_back({host.name + "-sw0", host.name, host.nics[0].name, "sw0", port, {}});
    fabric.hosts.push_back(std::move(host));
  }
  fabric.switches.push_back(std::move(sw));
  return fabric;
}

// Runs fn on a fresh thread placed in netns (the caller's namespace is never changed).
Status onThreadIn(const std::string& netns, const std::function<Status()>& fn) {
  Status result;
  std::thread worker([&] {
    const int fd = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
      result = core::errnoStatus(errno, "cannot enter " + netns);
      if (fd >= 0) ::close(fd);
      return;
    }
    ::close(fd);
    result = fn();
  });
  worker.join();
  return result;
}

// ---- figures ----

struct Stats {
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// Nearest-rank percentiles.
Stats stats(std::vector<double> values) {
  Stats s;
  s.n = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto at = [&](double p) {
    const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(s.n)));
    return values[std::clamp<size_t>(rank, 1, s.n) - 1];
  };
  s.p50 = at(50);
  s.p90 = at(90);
  s.p99 = at(99);
  s.max = values.back();
  return s;
}

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

std::string line(const Stats& s) {
  return fmt("p50 %7.3f  p90 %7.3f  p99 %7.3f  max %7.3f ms  (n=%zu)", s.p50, s.p90, s.p99, s.max,
             s.n);
}

const char* verdict(bool met) { return met ? "MET" : "NOT MET"; }

// ---- part 1 ----

// Times `pairs` calls of apply() then revert(), after kWarmup untimed ones; ms per pair. Stops at
// the first error.
core::Result<std::vector<double>> timePairs(int pairs, const std::function<Status()>& apply,
                                            const std::function<Status()>& revert) {
  std::vector<double> ms;
  for (int i = 0; i < kWarmup + pairs; ++i) {
    const int64_t start = core::steadyNowNs();
    FC_RETURN_IF_ERROR(apply());
    FC_RETURN_IF_ERROR(revert());
    if (i >= kWarmup) ms.push_back(msBetween(start, core::steadyNowNs()));
  }
  return ms;
}

Status spawnStatus(const std::vector<std::string>& argv) {
  const int rc = spawnWait(argv);
  if (rc == 0) return Status::ok();
  return Status(StatusCode::kInternal, argv[0] + " exited " + std::to_string(rc));
}

Status benchLinks(const std::string& ip) {
  auto links = sys::makeNetlinkLinkControl();
  const std::string port = "p0";
  auto netlink = timePairs(
      kLinkPairs, [&] { return links->setAdminUp(kSwitchNs, port, false); },
      [&] { return links->setAdminUp(kSwitchNs, port, true); });
  if (!netlink.isOk()) return netlink.status().withContext("netlink link down/up");
  auto forked = timePairs(
      kLinkPairs,
      [&] {
        return spawnStatus({ip, "-n", kSwitchNs, "link", "set", port, "down"});
      },
      [&] {
        return spawnStatus({ip, "-n", kSwitchNs, "link", "set", port, "up"});
      });
  if (!forked.isOk()) return forked.status().withContext("ip link set down/up");
  const Stats n = stats(*netlink);
  const Stats f = stats(*forked);
  std::printf("\n1. link down + up on a veth bridge port (%s/%s), %d pairs each\n", kSwitchNs,
              port.c_str(), kLinkPairs);
  std::printf("   netlink, sys::LinkControl::setAdminUp      %s\n", line(n).c_str());
  std::printf("   posix_spawn `ip -n NS link set DEV down|up` %s\n", line(f).c_str());
  std::printf("   ratio fork/netlink: p50 %.1fx, p90 %.1fx   (SONiC reported ~14x for theirs)\n",
              f.p50 / n.p50, f.p90 / n.p90);
  return Status::ok();
}

// packet_loss (nftables backend) through the registry the local agent uses, against `nft -f` of
// the same scripts and `nft delete table`, spawned from a thread inside the switch namespace.
Status benchNftables(injectors::Registry& registry, const std::string& dir) {
  const std::string nft = findTool("nft");
  injectors::Injector* loss = registry.find("packet_loss");
  std::printf("   packet_loss, nftables backend, 10 %%, both directions, on %s/p1, %d pairs each\n",
              kSwitchNs, kNftPairs);
  if (nft.empty() || loss == nullptr) {
    std::printf("   skipped: %s\n", nft.empty() ? "no nft binary" : "no packet_loss injector");
    return Status::ok();
  }
  const injectors::Fault fault{"packet_loss",
                               injectors::InterfaceTarget{kSwitchNs, "p1"},
                               {{"percent", 10}, {"backend", "nftables"}}};
  if (Status s = loss->validate(fault.params); !s.isOk()) {
    std::printf("   skipped: %s\n", s.toString().c_str());
    return Status::ok();
  }
  const json prior = {{"backend", "nftables"}};
  auto product = timePairs(
      kNftPairs, [&] { return loss->apply(fault); }, [&] { return loss->revert(fault, prior); });
  if (!product.isOk()) return product.status().withContext("packet_loss nftables");
  std::string script;
  for (const auto& s : injectors::nftLossScripts("p1", 10, {"ingress", "egress"})) {
    script += s + "\n";
  }
  const std::string file = dir + "/loss.nft";
  std::ofstream(file) << script;
  const std::string table = injectors::nftLossTableName("p1");
  core::Result<std::vector<double>> forked = std::vector<double>{};
  Status in_ns = onThreadIn(kSwitchNs, [&] {
    forked = timePairs(
        kNftPairs,
        [&] {
          return spawnStatus({nft, "-f", file});
        },
        [&] {
          return spawnStatus({nft, "delete", "table", "netdev", table});
        });
    return forked.status();
  });
  if (!in_ns.isOk()) return in_ns.withContext("nft -f");
  const Stats p = stats(*product);
  const Stats f = stats(*forked);
  std::printf("   libnftables, injectors::PacketLoss          %s\n", line(p).c_str());
  std::printf("   posix_spawn `nft -f FILE` + `nft delete`    %s\n", line(f).c_str());
  std::printf("   ratio fork/libnftables: p50 %.1fx\n", f.p50 / p.p50);
  return Status::ok();
}

// ---- the independent observer ----

// A raw NETLINK_ROUTE socket in one namespace, subscribed to RTNLGRP_LINK on a thread of its own
// (SCHED_FIFO when allowed, so that its wake-up is not what is measured): every IFF_UP change of
// any link there, stamped with CLOCK_MONOTONIC at receipt.
class LinkMonitor {
 public:
  struct Transition {
    std::string ifname;
    bool up = false;
    int64_t t_ns = 0;
  };

  ~LinkMonitor() { stop(); }

  // Returns once the initial state of every link is known.
  Status start(const std::string& netns) {
    std::promise<Status> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, netns, &ready] { run(netns, ready); });
    Status s = started.get();
    if (!s.isOk()) stop();
    return s;
  }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Transition> transitions() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  int overruns() {
    std::lock_guard lock(mu_);
    return overruns_;
  }
  bool realtime() const { return realtime_; }

 private:
  void run(const std::string& netns, std::promise<Status>& ready) {
    bool announced = false;
    auto fail = [&](const std::string& what) {
      if (!announced) ready.set_value(core::errnoStatus(errno, "link monitor: " + what));
      announced = true;
    };
    const int ns_fd = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0 || ::setns(ns_fd, CLONE_NEWNET) != 0) {
      fail("cannot enter " + netns);
      if (ns_fd >= 0) ::close(ns_fd);
      return;
    }
    ::close(ns_fd);
    const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return fail("socket");
    const int rcvbuf = 8 << 20;
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
    sockaddr_nl local{};
    local.nl_family = AF_NETLINK;
    local.nl_groups = RTMGRP_LINK;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
      ::close(fd);
      return fail("bind RTMGRP_LINK");
    }
    sched_param param{};
    param.sched_priority = 1;
    realtime_ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0;
    // The current state of every link, so that only changes are recorded.
    struct {
      nlmsghdr header;
      ifinfomsg info;
    } request{};
    request.header.nlmsg_len = sizeof(request);
    request.header.nlmsg_type = RTM_GETLINK;
    request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    request.header.nlmsg_seq = 1;
    request.info.ifi_family = AF_UNSPEC;
    if (::send(fd, &request, sizeof(request), 0) < 0) {
      ::close(fd);
      return fail("RTM_GETLINK dump");
    }
    std::map<int, bool> up;
    std::vector<char> buf(1 << 16);
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t got = ::recv(fd, buf.data(), buf.size(), 0);
      const int64_t t = core::steadyNowNs();
      if (got < 0) {
        if (errno == ENOBUFS) {
          std::lock_guard lock(mu_);
          ++overruns_;
        }
        continue;
      }
      auto remaining = static_cast<unsigned>(got);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, remaining);
           h = NLMSG_NEXT(h, remaining)) {
        if (h->nlmsg_type == NLMSG_DONE && h->nlmsg_seq == 1 && !announced) {
          announced = true;
          ready.set_value(Status::ok());
          continue;
        }
        if (h->nlmsg_type != RTM_NEWLINK) continue;
        const auto* info = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
        std::string name;
        int len = static_cast<int>(IFLA_PAYLOAD(h));
        for (auto* a = IFLA_RTA(info); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
          if (a->rta_type == IFLA_IFNAME) name = static_cast<const char*>(RTA_DATA(a));
        }
        const bool is_up = (info->ifi_flags & IFF_UP) != 0;
        auto [it, fresh] = up.try_emplace(info->ifi_index, is_up);
        if (fresh || it->second == is_up) continue;
        it->second = is_up;
        std::lock_guard lock(mu_);
        seen_.push_back({name, is_up, t});
      }
    }
    ::close(fd);
    if (!announced) ready.set_value(Status(StatusCode::kInternal, "link monitor: no dump end"));
  }

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> realtime_{false};
  std::mutex mu_;
  std::vector<Transition> seen_;
  int overruns_ = 0;
};

// ---- the synthetic workload and the agent around the real one ----

// Every rank reports rank_ready at once, then one sample every kSamplePeriodMs, handed to the
// listener in batches every kSampleFlushMs from a thread per rank (as the local agent's reader
// threads do). stop() is idempotent and reports each rank's exit with code 0.
class SyntheticWorkload : public agent::WorkloadHandle {
 public:
  SyntheticWorkload(const std::vector<agent::RankSpec>& ranks, int64_t origin_ns,
                    agent::WorkloadListener* listener)
      : listener_(listener), running_(static_cast<int>(ranks.size())) {
    for (const auto& spec : ranks) {
      threads_.emplace_back([this, rank = spec.rank, bytes = spec.message_bytes, origin_ns] {
        auto ms = [origin_ns](int64_t t) { return msBetween(origin_ns, t); };
        listener_->onEvent(rank, ms(core::steadyNowNs()), "rank_ready", json::object());
        std::vector<core::Sample> batch;
        auto next = std::chrono::steady_clock::now();
        auto flush_at = next + std::chrono::milliseconds(kSampleFlushMs);
        for (int64_t iteration = 0; !stop_; ++iteration) {
          next += std::chrono::milliseconds(kSamplePeriodMs);
          std::this_thread::sleep_until(next);
          const double end = ms(core::steadyNowNs());
          batch.push_back(
              {rank, iteration, end - (kSamplePeriodMs - 1), kSamplePeriodMs - 1.0, bytes});
          if (next >= flush_at) {
            listener_->onSamples(batch);
            batch.clear();
            flush_at += std::chrono::milliseconds(kSampleFlushMs);
          }
        }
        if (!batch.empty()) listener_->onSamples(batch);
      });
    }
  }
  ~SyntheticWorkload() override { stop(0); }

  void stop(int) override {
    std::lock_guard lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_ = true;
    for (size_t i = 0; i < threads_.size(); ++i) {
      threads_[i].join();
      --running_;
      listener_->onRankExit(static_cast<int>(i), 0);
    }
  }
  int runningRanks() const override { return running_.load(); }

 private:
  agent::WorkloadListener* listener_;
  std::atomic<int> running_;
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

// Forwards faults to the real local agent and notes when each apply/observe/revert call entered
// and returned, so that a phase's error can be split into engine wake-up and adapter time.
class BenchAgent : public agent::Agent {
 public:
  struct Call {
    std::string op;  // apply, observe, revert
    std::string ifname;
    int64_t enter_ns = 0;
    int64_t exit_ns = 0;
  };

  explicit BenchAgent(agent::Agent& inner) : inner_(&inner) {}
  // Between runs only.
  void use(agent::Agent* inner) { inner_ = inner; }

  core::Result<agent::AgentInfo> info() override { return inner_.load()->info(); }
  std::vector<injectors::KindInfo> capabilities() override { return inner_.load()->capabilities(); }
  Status validateFault(const std::string& kind, const json& params) override {
    return inner_.load()->validateFault(kind, params);
  }
  core::Result<json> captureFault(const injectors::Fault& fault) override {
    return inner_.load()->captureFault(fault);
  }
  Status applyFault(const injectors::Fault& fault) override {
    return timed("apply", fault, [&] { return inner_.load()->applyFault(fault); });
  }
  Status revertFault(const injectors::Fault& fault, const json& prior) override {
    return timed("revert", fault, [&] { return inner_.load()->revertFault(fault, prior); });
  }
  core::Result<json> observeFault(const injectors::Fault& fault) override {
    core::Result<json> out = json::object();
    (void)timed("observe", fault, [&] {
      out = inner_.load()->observeFault(fault);
      return out.status();
    });
    return out;
  }
  core::Result<std::vector<sys::RdmaPortCounters>> rdmaCounters() override {
    return inner_.load()->rdmaCounters();
  }
  core::Result<std::unique_ptr<agent::WorkloadHandle>> startWorkload(
      const std::vector<agent::RankSpec>& ranks, int64_t origin_ns,
      agent::WorkloadListener* listener) override {
    return std::unique_ptr<agent::WorkloadHandle>(
        std::make_unique<SyntheticWorkload>(ranks, origin_ns, listener));
  }

  std::vector<Call> calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  Status timed(const char* op, const injectors::Fault& fault, const std::function<Status()>& fn) {
    const int64_t enter = core::steadyNowNs();
    Status s = fn();
    const int64_t exit = core::steadyNowNs();
    std::lock_guard lock(mu_);
    // The bench flaps interfaces only; anything else is named in full so that it matches nothing.
    const injectors::InterfaceTarget* interface = injectors::interfaceOf(fault.target);
    calls_.push_back({op,
                      interface != nullptr ? interface->ifname : injectors::describe(fault.target),
                      enter, exit});
    return s;
  }

  std::atomic<agent::Agent*> inner_;
  std::mutex mu_;
  std::vector<Call> calls_;
};

// serve's guard with each allowed() call timed where it runs: inside the agent's apply.
class TimedGuard {
 public:
  agent::TargetGuard wrap(agent::TargetGuard guard) {
    guard.allowed = [this, inner = std::move(guard.allowed)] {
      const int64_t start = core::steadyNowNs();
      auto allowed = inner();
      const int64_t end = core::steadyNowNs();
      std::lock_guard lock(mu_);
      calls_.emplace_back(start, end);
      return allowed;
    };
    return guard;
  }
  // ms per call that started within [from_ns, to_ns].
  std::vector<double> within(int64_t from_ns, int64_t to_ns) {
    std::lock_guard lock(mu_);
    std::vector<double> out;
    for (const auto& [start, end] : calls_) {
      if (start >= from_ns && start <= to_ns) out.push_back(msBetween(start, end));
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<int64_t, int64_t>> calls_;
};

// ---- engine runs ----

struct RunOutcome {
  int64_t id = 0;
  std::string state;
  std::string error;
  int64_t origin_ns = 0;
  int64_t end_ns = 0;            // when the bench saw the final state
  double last_scheduled_ms = 0;  // of the last scheduled fault event
  std::vector<store::EventRecord> events;
};

core::Result<RunOutcome> runScenario(scenarios::Engine& engine, store::Store& store,
                                     const json& doc) {
  auto scenario = scenarios::parseScenario(doc);
  if (!scenario.isOk()) return scenario.status().withContext("scenario");
  auto id = engine.submit(*scenario, kFabricName);
  if (!id.isOk()) return id.status();
  const int64_t deadline = core::steadyNowNs() + int64_t{30} * 1000000000;
  RunOutcome out;
  out.id = *id;
  for (;;) {
    auto run = store.getRun(*id);
    if (!run.isOk()) return run.status();
    const std::string& s = run->state;
    if (s == "passed" || s == "failed" || s == "aborted" || s == "error" || s == "interrupted") {
      out.end_ns = core::steadyNowNs();
      out.state = s;
      out.error = run->error;
      out.origin_ns = run->attributes.value("clock_origin_steady_ns", int64_t{0});
      break;
    }
    if (core::steadyNowNs() > deadline) {
      (void)engine.abort(*id);
      return Status(StatusCode::kTimeout, "run " + std::to_string(*id) + " did not end in 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto events = store.events(*id);
  if (!events.isOk()) return events.status();
  out.events = std::move(events.value());
  return out;
}

// One scheduled IFF_UP change on one port and what was seen of it.
struct Phase {
  std::string ifname;
  bool up = false;
  int64_t scheduled_ns = 0;
  int64_t observed_ns = -1;  // the monitor's receipt; -1 when not seen
  int64_t call_ns = -1;      // the agent call that made it (apply / revert) entered
  int64_t call_exit_ns = -1;
  int64_t observe_ns = -1;  // ups: the observeFault call the engine makes first entered
  int64_t observe_exit_ns = -1;
};

// The run's scheduled downs (fault_applied) and restoring ups (fault_reverted, restored), each
// paired in order, per port and direction, with the monitor's transitions and the agent's calls
// made during the run.
std::vector<Phase> phasesOf(const RunOutcome& run,
                            const std::vector<LinkMonitor::Transition>& transitions,
                            const std::vector<BenchAgent::Call>& calls, std::string* problems) {
  std::vector<Phase> phases;
  for (const auto& e : run.events) {
    const bool down = e.kind == "fault_applied";
    const bool up = e.kind == "fault_reverted" && e.detail.value("restored", false);
    if ((!down && !up) || !e.detail.contains("scheduled_ms")) continue;
    Phase p;
    p.ifname = e.detail["target"].value("ifname", "");
    p.up = up;
    p.scheduled_ns = run.origin_ns + std::llround(e.detail["scheduled_ms"].get<double>() * 1e6);
    phases.push_back(p);
  }
  std::sort(phases.begin(), phases.end(),
            [](const Phase& a, const Phase& b) { return a.scheduled_ns < b.scheduled_ns; });
  auto inRun = [&](int64_t t) { return t >= run.origin_ns && t <= run.end_ns; };
  std::map<std::pair<std::string, bool>, std::vector<int64_t>> seen;
  for (const auto& t : transitions) {
    if (inRun(t.t_ns)) seen[{t.ifname, t.up}].push_back(t.t_ns);
  }
  std::map<std::pair<std::string, std::string>, std::vector<const BenchAgent::Call*>> made;
  for (const auto& c : calls) {
    if (inRun(c.enter_ns)) made[{c.ifname, c.op}].push_back(&c);
  }
  std::map<std::pair<std::string, bool>, size_t> next_seen;
  std::map<std::pair<std::string, std::string>, size_t> next_call;
  auto take = [](const std::vector<const BenchAgent::Call*>& list,
                 size_t& i) -> const BenchAgent::Call* {
    return i < list.size() ? list[i++] : nullptr;
  };
  for (auto& p : phases) {
    auto& observed = seen[{p.ifname, p.up}];
    size_t& i = next_seen[{p.ifname, p.up}];
    if (i < observed.size()) p.observed_ns = observed[i++];
    const std::string op = p.up ? "revert" : "apply";
    if (const BenchAgent::Call* c = take(made[{p.ifname, op}], next_call[{p.ifname, op}])) {
      p.call_ns = c->enter_ns;
      p.call_exit_ns = c->exit_ns;
    }
    if (p.up) {
      if (const BenchAgent::Call* c =
              take(made[{p.ifname, "observe"}], next_call[{p.ifname, "observe"}])) {
        p.observe_ns = c->enter_ns;
        p.observe_exit_ns = c->exit_ns;
      }
    }
  }
  size_t paired = 0;
  size_t observed = 0;
  for (const auto& [key, list] : seen) observed += list.size();
  for (const auto& p : phases) paired += p.observed_ns >= 0 ? 1 : 0;
  if (paired != phases.size() || observed != phases.size()) {
    *problems += fmt("   ! %zu scheduled changes, %zu observed in the run's window, %zu paired\n",
                     phases.size(), observed, paired);
  }
  return phases;
}

std::vector<double> collect(const std::vector<Phase>& phases, bool up,
                            const std::function<std::optional<double>(const Phase&)>& f) {
  std::vector<double> out;
  for (const auto& p : phases) {
    if (p.up != up) continue;
    if (auto v = f(p)) out.push_back(*v);
  }
  return out;
}

std::optional<double> between(int64_t from, int64_t to) {
  if (from < 0 || to < 0) return std::nullopt;
  return msBetween(from, to);
}

void printRunHeader(const RunOutcome& run) {
  std::printf("   run %lld: %s%s%s; %zu events; ended %.0f ms after its last scheduled instant\n",
              static_cast<long long>(run.id), run.state.c_str(), run.error.empty() ? "" : ": ",
              run.error.c_str(), run.events.size(),
              msBetween(run.origin_ns, run.end_ns) - run.last_scheduled_ms);
}

double lastScheduledMs(const RunOutcome& run) {
  double last = 0;
  for (const auto& e : run.events) {
    if (e.detail.is_object() && e.detail.contains("scheduled_ms")) {
      last = std::max(last, e.detail["scheduled_ms"].get<double>());
    }
  }
  return last;
}

json flapScenario(const std::string& name, const json& target, int down_ms, int up_ms, int count,
                  const std::vector<std::string>& hosts) {
  return {{"version", 1},
          {"name", name},
          {"fabric", kFabricName},
          {"workload", {{"hosts", hosts}, {"message_bytes", 1 << 20}, {"compute_ms", 5}}},
          {"baseline_ms", 500},
          {"steps",
           {{{"kind", "link_flap"},
             {"target", target},
             {"at_ms", 0},
             {"params", {{"down_ms", down_ms}, {"up_ms", up_ms}, {"count", count}}}}}},
          {"recovery_ms", 500},
          {"recovered_after", 3}};
}

// Part 2: |observed - scheduled| of every down and up of one port flapped 10 ms / 10 ms.
bool reportPhaseTiming(const RunOutcome& run, const std::vector<LinkMonitor::Transition>& seen,
                       const std::vector<BenchAgent::Call>& calls, TimedGuard* guard) {
  std::string problems;
  const auto phases = phasesOf(run, seen, calls, &problems);
  std::fputs(problems.c_str(), stdout);
  bool met = true;
  for (bool up : {false, true}) {
    const Stats err = stats(
        collect(phases, up, [](const Phase& p) { return between(p.scheduled_ns, p.observed_ns); }));
    const bool ok = err.n > 0 && err.p99 <= kPhaseTargetP99Ms;
    met = met && ok;
    std::printf("   %-5s |observed - scheduled|  %s  p99 <= %.0f ms: %s\n", up ? "up" : "down",
                line(err).c_str(), kPhaseTargetP99Ms, verdict(ok));
  }
  // The first instant comes right after the run thread's synchronous setState("injecting").
  if (!phases.empty() && phases.front().observed_ns >= 0) {
    std::printf("   first down of the run (at_ms 0): %.3f ms late\n",
                msBetween(phases.front().scheduled_ns, phases.front().observed_ns));
  }
  std::printf(
      "   where the time goes (downs: apply; ups: the engine's observeFault, then revert):\n");
  auto part = [&](const char* what, bool up, std::function<std::optional<double>(const Phase&)> f) {
    std::printf("     %-5s %-34s %s\n", up ? "up" : "down", what,
                line(stats(collect(phases, up, f))).c_str());
  };
  part("scheduled -> apply entered", false,
       [](const Phase& p) { return between(p.scheduled_ns, p.call_ns); });
  part("apply entered -> kernel change seen", false,
       [](const Phase& p) { return between(p.call_ns, p.observed_ns); });
  part("apply call duration", false,
       [](const Phase& p) { return between(p.call_ns, p.call_exit_ns); });
  if (guard != nullptr && !phases.empty()) {
    std::printf("     %-5s %-34s %s\n", "down", "of which serve's guard, allowed()",
                line(stats(guard->within(phases.front().scheduled_ns, run.end_ns))).c_str());
  }
  part("scheduled -> observeFault entered", true,
       [](const Phase& p) { return between(p.scheduled_ns, p.observe_ns); });
  part("observeFault duration", true,
       [](const Phase& p) { return between(p.observe_ns, p.observe_exit_ns); });
  part("scheduled -> revert entered", true,
       [](const Phase& p) { return between(p.scheduled_ns, p.call_ns); });
  part("revert entered -> kernel change seen", true,
       [](const Phase& p) { return between(p.call_ns, p.observed_ns); });
  return met;
}

// Part 3: per instant, the spread of the 16 ports' observed changes.
bool reportSkew(const RunOutcome& run, const std::vector<LinkMonitor::Transition>& seen,
                const std::vector<BenchAgent::Call>& calls, TimedGuard* guard) {
  std::string problems;
  const auto phases = phasesOf(run, seen, calls, &problems);
  std::fputs(problems.c_str(), stdout);
  struct Instant {
    int64_t min_seen = INT64_MAX, max_seen = INT64_MIN, min_call = INT64_MAX, max_call = INT64_MIN;
    int ports = 0;
  };
  std::map<std::pair<bool, int64_t>, Instant> instants;
  for (const auto& p : phases) {
    Instant& in = instants[{p.up, p.scheduled_ns}];
    ++in.ports;
    if (p.observed_ns >= 0) {
      in.min_seen = std::min(in.min_seen, p.observed_ns);
      in.max_seen = std::max(in.max_seen, p.observed_ns);
    }
    if (p.call_ns >= 0) {
      in.min_call = std::min(in.min_call, p.call_ns);
      in.max_call = std::max(in.max_call, p.call_ns);
    }
  }
  if (guard != nullptr && !phases.empty()) {
    std::printf("   serve's guard, allowed() inside each apply  %s\n",
                line(stats(guard->within(phases.front().scheduled_ns, run.end_ns))).c_str());
  }
  bool met = true;
  for (bool up : {false, true}) {
    std::vector<double> skew, call_skew, first, last;
    int ports = 0;
    for (const auto& [key, in] : instants) {
      if (key.first != up) continue;
      ports = std::max(ports, in.ports);
      if (in.min_seen != INT64_MAX) {
        skew.push_back(msBetween(in.min_seen, in.max_seen));
        first.push_back(msBetween(key.second, in.min_seen));
        last.push_back(msBetween(key.second, in.max_seen));
      }
      if (in.min_call != INT64_MAX) call_skew.push_back(msBetween(in.min_call, in.max_call));
    }
    const Stats s = stats(skew);
    const bool ok = s.n > 0 && s.p99 <= kSkewTargetP99Ms;
    met = met && ok;
    const char* dir = up ? "up" : "down";
    std::printf("   %-5s skew (last - first of %d ports)  %s  p99 <= %.0f ms: %s\n", dir, ports,
                line(s).c_str(), kSkewTargetP99Ms, verdict(ok));
    std::printf("   %-5s scheduled -> first port seen      %s\n", dir, line(stats(first)).c_str());
    std::printf("   %-5s scheduled -> last port seen       %s\n", dir, line(stats(last)).c_str());
    std::printf("   %-5s spread of the %s calls' entry %s\n", dir, up ? "revert" : "apply ",
                line(stats(call_skew)).c_str());
  }
  return met;
}

std::string machineLine() {
  utsname u{};
  ::uname(&u);
  std::ifstream loadavg("/proc/loadavg");
  std::string l1, l5, l15;
  loadavg >> l1 >> l5 >> l15;
#ifdef __OPTIMIZE__
  const char* build = "optimized";
#else
  const char* build = "unoptimized (Debug)";
#endif
  return fmt("inject_bench: nproc %u, kernel %s, %s build, load %s %s %s",
             std::thread::hardware_concurrency(), u.release, build, l1.c_str(), l5.c_str(),
             l15.c_str());
}

// Everything after setup; the caller removes what was built whatever this returns.
Status runBench(const std::string& ip, const std::string& dir) {
  FC_RETURN_IF_ERROR(buildFabric(ip));
  const scenarios::Fabric fabric = describeFabric();
  FC_RETURN_IF_ERROR(lab::writeFabricFile(dir + "/state", kFabricName, fabric));

  FC_RETURN_IF_ERROR(benchLinks(ip));

  // serve's own embedded agent: the real adapters and registry behind serve's guard, whose
  // allowlist is read from the registered fabric (only fcb-* interfaces) on every apply.
  lab::DirectoryFabricCatalog catalog(dir + "/state");
  TimedGuard timed_guard;
  app::LocalStack stack(
      "", dir + "/logs",
      timed_guard.wrap(app::makeServeTargetGuard(catalog, {"127.0.0.1", {}, false})));
  FC_RETURN_IF_ERROR(benchNftables(*stack.registry, dir));

  // The same agent without a guard, as `fabric-chaos agent` runs it (its AgentService checks
  // its own --allow list before calling the agent): what the guard costs on the critical path.
  app::LocalStack unguarded("", dir + "/logs");
  // What serve's guard does on every capture and apply, alone.
  agent::TargetGuard guard = app::makeServeTargetGuard(catalog, {"127.0.0.1", {}, false});
  std::vector<double> guard_ms;
  for (int i = 0; i < kWarmup + 100; ++i) {
    const int64_t start = core::steadyNowNs();
    const auto allowed = guard.allowed();
    if (i >= kWarmup && !allowed.empty()) guard_ms.push_back(msBetween(start, core::steadyNowNs()));
  }

  LinkMonitor monitor;
  FC_RETURN_IF_ERROR(monitor.start(kSwitchNs));
  auto opened = store::Store::open(dir + "/bench.db");
  if (!opened.isOk()) return opened.status().withContext("store");
  std::unique_ptr<store::Store> store = std::move(opened.value());
  // What one fsynced commit costs here (the recorder's appendEvent), on a run of its own.
  std::vector<double> commit_ms;
  if (auto probe = store->createRun("fcb-commit-probe", json::object(), kFabricName);
      probe.isOk()) {
    for (int i = 0; i < kWarmup + 50; ++i) {
      const int64_t start = core::steadyNowNs();
      (void)store->appendEvent({*probe, 0, core::wallNowMs(), "probe", {{"i", i}}});
      if (i >= kWarmup) commit_ms.push_back(msBetween(start, core::steadyNowNs()));
    }
    (void)store->finishRun(*probe, "error", std::nullopt, json::object(), "commit probe");
  }
  BenchAgent agent(stack.local_agent);
  scenarios::SingleAgentDirectory agents(agent);
  core::SteadyClock clock;
  scenarios::EngineOptions options;
  options.ready_timeout_ms = 5000;
  options.stop_grace_ms = 1000;
  scenarios::Engine engine({store.get(), &agents, &catalog, &clock}, options);
  engine.start();

  struct Config {
    const char* label;
    agent::Agent* agent;
    TimedGuard* guard;
  };
  const std::vector<Config> configs{
      {"serve's embedded agent, with serve's guard (the product as it runs)", &stack.local_agent,
       &timed_guard},
      {"the same agent without a guard (diagnostic)", &unguarded.local_agent, nullptr}};

  std::printf(
      "\n2. link_flap 10 ms down / 10 ms up, count 100, on %s/p0: real Engine, WAL store "
      "on disk, local agent, 4 synthetic ranks; monitor %s\n",
      kSwitchNs, monitor.realtime() ? "SCHED_FIFO" : "SCHED_OTHER");
  std::printf("   one fsynced store commit (appendEvent), idle store         %s\n",
              line(stats(commit_ms)).c_str());
  std::printf("   serve's guard alone, allowed() (reads the fabric files)   %s\n",
              line(stats(guard_ms)).c_str());
  bool timing_met = false;
  for (const Config& config : configs) {
    agent.use(config.agent);
    std::printf("  %s:\n", config.label);
    auto flap = runScenario(
        engine, *store,
        flapScenario("fcb-flap-10ms", {{"host", "h0"}}, 10, 10, 100, {"h0", "h1", "h2", "h3"}));
    if (!flap.isOk()) return flap.status().withContext("10 ms flap run");
    flap->last_scheduled_ms = lastScheduledMs(*flap);
    printRunHeader(*flap);
    const bool met = reportPhaseTiming(*flap, monitor.transitions(), agent.calls(), config.guard);
    if (&config == &configs.front()) timing_met = met;
  }

  std::printf(
      "\n3. one step on labels {bench=flap16} -> 16 switch ports, 50 ms / 50 ms, count "
      "20; 16 synthetic ranks\n");
  std::vector<std::string> all_hosts;
  for (const auto& h : fabric.hosts) all_hosts.push_back(h.name);
  bool skew_met = false;
  for (const Config& config : configs) {
    agent.use(config.agent);
    std::printf("  %s:\n", config.label);
    auto skew = runScenario(
        engine, *store,
        flapScenario("fcb-flap-16", {{"labels", {{"bench", "flap16"}}}}, 50, 50, 20, all_hosts));
    if (!skew.isOk()) return skew.status().withContext("16-port flap run");
    skew->last_scheduled_ms = lastScheduledMs(*skew);
    printRunHeader(*skew);
    const bool met = reportSkew(*skew, monitor.transitions(), agent.calls(), config.guard);
    if (&config == &configs.front()) skew_met = met;
  }
  engine.shutdown();
  monitor.stop();
  if (monitor.overruns() > 0) {
    std::printf("   ! the monitor's socket overran %d times: transitions were lost\n",
                monitor.overruns());
  }

  // Nothing may be left faulted by the runs.
  auto links = sys::makeNetlinkLinkControl();
  int down = 0;
  for (int i = 0; i < kPorts; ++i) {
    auto info = links->getLink(kSwitchNs, "p" + std::to_string(i));
    if (!info.isOk() || !info->admin_up) ++down;
  }
  auto journal = store->unrevertedJournal();
  std::printf("\nafter the runs: %d port(s) down, %zu unreverted journal entr%s\n", down,
              journal.isOk() ? journal->size() : size_t{0},
              journal.isOk() && journal->size() == 1 ? "y" : "ies");
  std::printf(
      "targets (serve's configuration): phase error p99 <= %.0f ms %s; 16-port skew p99 <= %.0f "
      "ms %s\n",
      kPhaseTargetP99Ms, verdict(timing_met), kSkewTargetP99Ms, verdict(skew_met));
  return Status::ok();
}

}  // namespace
}  // namespace fabric_chaos::bench

int main() {
  using namespace fabric_chaos;
  if (::geteuid() != 0) {
    std::fprintf(stderr, "inject_bench: must run as root (it builds network namespaces)\n");
    return 2;
  }
  const std::string ip = bench::findTool("ip");
  if (ip.empty()) {
    std::fprintf(stderr, "inject_bench: no `ip` (iproute2) in PATH\n");
    return 2;
  }
  core::setLogLevel(core::LogLevel::kWarn);
  // The stop signals go to one thread, which removes what was built and exits; every other
  // thread (and so every child, until spawnWait resets the mask) has them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  bench::Scratch scratch(ip);
  std::atomic<bool> finished{false};
  std::thread guard([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (finished) return;
    std::fprintf(stderr, "inject_bench: signal %d, removing fcb-* namespaces\n", sig);
    scratch.removeAll();
    _exit(130);
  });

  const int64_t started = core::steadyNowNs();
  std::printf("%s\n", bench::machineLine().c_str());
  for (const auto& ns : bench::ownNamespaces()) {
    std::printf("removing %s, left by an earlier run\n", ns.c_str());
  }
  scratch.removeAll();
  char tmpl[] = "/tmp/fcb-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("inject_bench: mkdtemp");
    finished = true;
    pthread_kill(guard.native_handle(), SIGUSR1);
    guard.join();
    return 2;
  }
  scratch.setDir(tmpl);
  const core::Status status = bench::runBench(ip, tmpl);
  scratch.removeAll();
  finished = true;
  pthread_kill(guard.native_handle(), SIGUSR1);
  guard.join();
  const bool clean = bench::ownNamespaces().empty() && !std::filesystem::exists(tmpl);
  std::printf("cleanup: %s; %.1f s in all\n",
              clean ? "no fcb-* namespace and no temporary directory left" : "SOMETHING WAS LEFT",
              bench::msBetween(started, core::steadyNowNs()) / 1000);
  if (!status.isOk()) {
    std::fprintf(stderr, "inject_bench: %s\n", status.toString().c_str());
    return 2;
  }
  return 0;
}
