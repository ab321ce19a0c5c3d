#include "lab/slurm_lab.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/file_replace.h"
#include "lab/lab_common.h"
#include "lab/pfc_agent.h"

namespace fabric_chaos::lab {
namespace {

// Whether `path` exists; false too when it cannot be looked at (not root, a directory of root's):
// the checks below then fail with their own clear sentence instead of an exception.
bool pathExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

using core::Status;
using core::StatusCode;
using Clock = std::chrono::steady_clock;

constexpr int kGraceMs = 5000;          // slurmctld saves its state on SIGTERM
constexpr int kMungeReadyMs = 10000;    // munged creates its socket within a second
constexpr int kPollMs = 250;            // between two sinfo
constexpr int kSinfoTimeoutMs = 15000;  // one sinfo: MessageTimeout=10 s, and some
constexpr int kLogLines = 3;            // of each log in an error sentence
constexpr size_t kMungeKeyBytes = 1024;

// Tool and the Debian package that brings it.
const char* kTools[][2] = {{"munged", "munge"},
                           {"slurmctld", "slurmctld"},
                           {"slurmd", "slurmd"},
                           {"sinfo", "slurm-client"},
                           {"nsenter", "util-linux"}};

// The daemons a cluster runs, in the order `down` ends them: job steps and node daemons before
// the controller (a slurmd whose controller is gone keeps retrying), munged last, since every
// other one still talks through it. slurmscriptd is slurmctld's helper.
const char* kSlurmDaemons[] = {"slurmstepd", "slurmd", "slurmctld", "slurmscriptd"};

// The first of `logs` with anything in it, as its last lines.
std::string tailOfFirstNonEmpty(const std::vector<std::string>& logs) {
  for (const std::string& log : logs) {
    const std::string text = readTextFile(log);
    if (!trimRight(text).empty()) return logTailOneLine(text, kLogLines);
  }
  return "(" + (logs.empty() ? std::string("no log") : logs.front()) + " is empty)";
}

// munged wants a key only root can read; 1024 random bytes as its own key generator makes.
Status writeMungeKey(const std::string& path) {
  std::string key(kMungeKeyBytes, '\0');
  for (size_t filled = 0; filled < key.size();) {
    const ssize_t n = ::getrandom(key.data() + filled, key.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return core::errnoStatus(errno, "getrandom for the munge key");
    filled += static_cast<size_t>(n);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (fd < 0) return core::errnoStatus(errno, "cannot create the munge key " + path);
  const ssize_t written = ::write(fd, key.data(), key.size());
  const int err = errno;
  ::close(fd);
  if (written != static_cast<ssize_t>(key.size())) {
    return Status(StatusCode::kInternal, "cannot write the munge key " + path, err);
  }
  return Status::ok();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

SlurmLab::SlurmLab(sys::CommandRunner& runner, sys::DaemonControl& daemons, SlurmLabOptions options)
    : runner_(runner),
      daemons_(daemons),
      options_(std::move(options)),
      layout_(slurmLabLayout(options_)) {}

Status SlurmLab::checkPrerequisites() {
  if (::geteuid() != 0) {
    return Status(StatusCode::kPermissionDenied,
                  "--with-slurm needs root to create the controller namespace and run Slurm's "
                  "daemons; run it as root (sudo)");
  }
  std::string missing;
  for (const auto& [tool, package] : kTools) {
    if (!isOnPath(tool)) {
      missing +=
          std::string(missing.empty() ? "" : ", ") + tool + " (Debian package " + package + ")";
    }
  }
  if (!missing.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "--with-slurm needs " + missing + "; deploy/install-deps.sh installs them");
  }
  return Status::ok();
}

std::vector<SlurmLab::Running> SlurmLab::runningDaemons() {
  std::vector<Running> running;
  for (const char* comm : kSlurmDaemons) {
    for (const sys::ProcessInfo& p : daemons_.find(comm)) {
      if (p.envValue("SLURM_CONF") != layout_.conf) continue;
      Running r{p.pid, p.comm, ""};
      const auto n = std::find(p.argv.begin(), p.argv.end(), "-N");
      if (r.comm == "slurmd" && n != p.argv.end() && n + 1 != p.argv.end()) r.node = *(n + 1);
      running.push_back(r);
    }
  }
  const std::string socket_arg = "--socket=" + layout_.munge_socket;
  for (const sys::ProcessInfo& p : daemons_.find("munged")) {
    if (std::find(p.argv.begin(), p.argv.end(), socket_arg) != p.argv.end()) {
      running.push_back({p.pid, p.comm, ""});
    }
  }
  return running;
}

core::Result<bool> SlurmLab::controllerNetnsPresent() {
  auto present = namespacesWithPrefix(runner_, layout_.controller_netns);
  if (!present.isOk()) return present.status();
  return std::find(present->begin(), present->end(), layout_.controller_netns) != present->end();
}

core::Result<SlurmLabStatus> SlurmLab::status() {
  SlurmLabStatus st;
  if (!checkSlurmLabLayout(options_).isOk()) return st;  // no cluster can be there
  auto netns = controllerNetnsPresent();
  if (!netns.isOk()) return netns.status();
  st.controller_netns = *netns;
  if (pathExists(layout_.conf)) {
    st.conf = layout_.conf;
    st.nodes = nodesInSlurmConf(readTextFile(layout_.conf));
  }
  for (const Running& r : runningDaemons()) {
    st.munged = st.munged || r.comm == "munged";
    st.slurmctld = st.slurmctld || r.comm == "slurmctld";
    if (r.comm == "slurmd" && !r.node.empty()) st.running_nodes.push_back(r.node);
  }
  std::sort(st.running_nodes.begin(), st.running_nodes.end());
  bool every_node = !st.nodes.empty();
  for (const std::string& node : st.nodes) {
    every_node =
        every_node && std::binary_search(st.running_nodes.begin(), st.running_nodes.end(), node);
  }
  st.up = st.controller_netns && st.munged && st.slurmctld && every_node;
  return st;
}

Status SlurmLab::prepareDirectory(const SlurmLabPlan& plan) {
  namespace fs = std::filesystem;
  const SlurmLabLayout& l = plan.layout;
  std::error_code ec;
  std::vector<std::string> dirs = {l.dir, l.munge_dir, l.spool_dir, l.state_save_dir, l.log_dir};
  // slurmd does not make its spool directory (SlurmdSpoolDir=<spool>/%n) itself.
  for (const SlurmNodePlan& node : plan.nodes) dirs.push_back(l.nodeSpool(node.node));
  for (const std::string& dir : dirs) {
    fs::create_directories(dir, ec);
    if (ec) return Status(StatusCode::kInternal, "cannot create " + dir + ": " + ec.message());
  }
  // munged refuses a socket directory that others may write to.
  fs::permissions(l.munge_dir,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (ec) return Status(StatusCode::kInternal, "cannot chmod " + l.munge_dir + ": " + ec.message());
  FC_RETURN_IF_ERROR(writeMungeKey(l.munge_key));
  return core::replaceFileContents(l.conf, plan.conf_text);
}

std::string SlurmLab::deadDaemon() {
  for (const Started& s : started_) {
    if (!daemons_.alive(s.pid)) return s.what + " exited: " + tailOfFirstNonEmpty(s.logs);
  }
  return "";
}

Status SlurmLab::waitForMunge(pid_t munged) {
  const Clock::time_point start = Clock::now();
  while (!pathExists(layout_.munge_socket)) {
    if (const std::string dead = deadDaemon(); !dead.empty()) {
      return Status(StatusCode::kUnavailable, dead);
    }
    if (secondsSince(start) * 1000 > kMungeReadyMs) {
      return Status(StatusCode::kUnavailable,
                    "munged (pid " + std::to_string(munged) + ") made no socket " +
                        layout_.munge_socket + " within " + secondsText(kMungeReadyMs / 1000.0) +
                        ": " +
                        tailOfFirstNonEmpty({layout_.munge_log, layout_.daemonOutput("munged")}));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::ok();
}

Status SlurmLab::startDaemons(const SlurmLabPlan& plan, const Progress& progress) {
  const SlurmLabLayout& l = plan.layout;
  auto start = [&](const std::string& what, const sys::DaemonSpec& spec,
                   const std::string& own_log) -> core::Result<pid_t> {
    auto pid = daemons_.start(spec);
    if (!pid.isOk()) return pid.status().withContext("starting " + what);
    started_.push_back({what, *pid, {own_log, spec.log_path}});
    return pid;
  };
  auto munged = start("munged", mungedSpec(l), l.munge_log);
  if (!munged.isOk()) return munged.status();
  FC_RETURN_IF_ERROR(waitForMunge(*munged));
  progress("munged (pid " + std::to_string(*munged) + ") serves every namespace through " +
           l.munge_socket);
  auto slurmctld = start("slurmctld", slurmctldSpec(l), l.slurmctld_log);
  if (!slurmctld.isOk()) return slurmctld.status();
  progress("slurmctld (pid " + std::to_string(*slurmctld) + ") in namespace " + l.controller_netns +
           " at " + plan.controller_address);
  std::vector<std::string> nodes;
  for (const SlurmNodePlan& node : plan.nodes) {
    auto slurmd = start("slurmd " + node.node, slurmdSpec(l, node), l.slurmdLog(node.node));
    if (!slurmd.isOk()) return slurmd.status();
    nodes.push_back(node.node);
  }
  progress("slurmd for " + joined(nodes) + ", each in its host's namespace");
  return Status::ok();
}

Status SlurmLab::waitUntilIdle(const SlurmLabPlan& plan, const Progress& progress) {
  std::vector<std::string> nodes;
  for (const SlurmNodePlan& node : plan.nodes) nodes.push_back(node.node);
  const Clock::time_point start = Clock::now();
  std::string last_seen = "nothing yet";
  std::string first_not_idle = nodes.front();
  while (true) {
    if (const std::string dead = deadDaemon(); !dead.empty()) {
      return Status(StatusCode::kUnavailable, "the Slurm cluster did not come up: " + dead);
    }
    auto sinfo = runner_.run(sinfoNodeStatesArgv(plan.layout), kSinfoTimeoutMs);
    if (!sinfo.isOk()) {
      last_seen = sinfo.status().message();
    } else if (sinfo->exit_code != 0) {
      last_seen = "exit " + std::to_string(sinfo->exit_code) + ": " + trimRight(sinfo->err);
    } else {
      const std::string not_idle = nodesNotIdle(sinfo->out, nodes);
      if (not_idle.empty()) {
        progress("Slurm is up after " + secondsText(secondsSince(start)) + ": sinfo shows " +
                 joined(nodes) + " idle in partition " + plan.cluster.partition);
        return Status::ok();
      }
      last_seen = not_idle;
      first_not_idle = not_idle.substr(0, not_idle.find(' '));
    }
    if (secondsSince(start) * 1000 > options_.ready_timeout_ms) {
      const SlurmLabLayout& l = plan.layout;
      return Status(StatusCode::kUnavailable,
                    "the Slurm cluster did not come up within " +
                        secondsText(options_.ready_timeout_ms / 1000.0) + ": sinfo showed \"" +
                        last_seen + "\"; slurmctld.log ends: " +
                        tailOfFirstNonEmpty({l.slurmctld_log, l.daemonOutput("slurmctld")}) +
                        "; slurmd-" + first_not_idle + ".log ends: " +
                        tailOfFirstNonEmpty({l.slurmdLog(first_not_idle),
                                             l.daemonOutput("slurmd-" + first_not_idle)}));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
}

core::Result<scenarios::SlurmCluster> SlurmLab::up(const scenarios::Fabric& fabric,
                                                   const Progress& progress) {
  FC_RETURN_IF_ERROR(checkPrerequisites());
  auto plan = planSlurmLab(fabric, options_);
  if (!plan.isOk()) return plan.status();
  auto current = status();
  if (!current.isOk()) return current.status();
  if (current->up && readTextFile(layout_.conf) == plan->conf_text) {
    progress("Slurm is already up on lab " + options_.name + " (" + layout_.conf + ")");
    return plan->cluster;
  }
  if (current->controller_netns || current->munged || current->slurmctld ||
      !current->running_nodes.empty() || pathExists(layout_.dir)) {
    progress("removing a partial or different Slurm cluster first");
    FC_RETURN_IF_ERROR(down([](const std::string&) {}));
  }
  const Status built = [&]() -> Status {
    FC_RETURN_IF_ERROR(prepareDirectory(*plan));
    progress("Slurm controller namespace " + layout_.controller_netns + " (" +
             plan->controller_address + ") on " + plan->switch_netns + ":" + plan->switch_port);
    for (const auto& command : controllerNamespaceCommands(*plan)) {
      FC_RETURN_IF_ERROR(runIp(runner_, command, {}));
    }
    FC_RETURN_IF_ERROR(startDaemons(*plan, progress));
    return waitUntilIdle(*plan, progress);
  }();
  if (!built.isOk()) {
    // Nothing half-started stays: the logs' tails are in the message already.
    (void)down([](const std::string&) {});
    return built;
  }
  return plan->cluster;
}

Status SlurmLab::down(const Progress& progress) {
  // No cluster can have been made with options its layout refuses: nothing to take down.
  if (!checkSlurmLabLayout(options_).isOk()) return Status::ok();
  started_.clear();
  Status first_error;
  std::vector<std::string> ended;
  for (const Running& r : runningDaemons()) {
    if (daemons_.terminate(r.pid, kGraceMs)) {
      ended.push_back(r.node.empty() ? r.comm : r.comm + " " + r.node);
    } else if (first_error.isOk()) {
      first_error = Status(StatusCode::kInternal, r.comm + " (pid " + std::to_string(r.pid) +
                                                      ") of the lab's Slurm cluster would not end");
    }
  }
  if (!ended.empty()) progress("ended " + joined(ended));
  auto netns = controllerNetnsPresent();
  if (!netns.isOk()) return netns.status();
  if (*netns) {
    // An srun or sinfo someone left running there would outlive the namespace's name.
    FC_RETURN_IF_ERROR(stopProcessesInNetns(runner_, layout_.controller_netns, progress));
    FC_RETURN_IF_ERROR(runIp(runner_, {"netns", "del", layout_.controller_netns}, {}));
    progress("removed namespace " + layout_.controller_netns + " and its port on the bridge");
  }
  // A daemon that would not end may still write there: its directory stays for a second try.
  if (!first_error.isOk()) return first_error;
  std::error_code ec;
  if (pathExists(layout_.dir)) {
    std::filesystem::remove_all(layout_.dir, ec);
    if (ec) {
      return Status(StatusCode::kInternal, "cannot remove " + layout_.dir + ": " + ec.message());
    }
    progress("removed " + layout_.dir);
  }
  return Status::ok();
}

}  // namespace fabric_chaos::lab
