#include "lab/ib_lab.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ib/ibnetdiscover.h"
#include "lab/lab_common.h"

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;
using Clock = std::chrono::steady_clock;

constexpr int kSmGraceMs = 3000;       // an OpenSM that lost its ibsim ignores SIGTERM for ~2 s
constexpr int kPollMs = 250;           // between looks at a subnet coming up
constexpr int kToolTimeoutMs = 15000;  // one sminfo or ibnetdiscover

const char* kTools[][2] = {{"ibsim", "ibsim-utils"},
                           {"opensm", "opensm"},
                           {"sminfo", "infiniband-diags"},
                           {"ibnetdiscover", "infiniband-diags"}};

// The last `lines` lines of a log, for an error message.
std::string logTail(const std::string& path, int lines = 8) {
  const std::string text = readTextFile(path);
  size_t at = text.size();
  for (int i = 0; i <= lines && at != std::string::npos && at > 0; ++i) {
    at = text.rfind('\n', at - 1);
  }
  const std::string tail = at == std::string::npos ? text : text.substr(at + 1);
  return tail.empty() ? "(" + path + " is empty)" : tail;
}

Status writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status(StatusCode::kInternal, "cannot write " + path);
  return Status::ok();
}

size_t expectedLinks(const ib::FatTreeShape& shape) {
  return static_cast<size_t>(shape.leaves) * (shape.hosts_per_leaf + shape.spines);
}

size_t expectedNodes(const ib::FatTreeShape& shape) {
  return static_cast<size_t>(shape.leaves) * (1 + shape.hosts_per_leaf) + shape.spines;
}

// The fabric's shape as the options file records it: a lab is reused only when it matches.
std::string optionsRecord(const IbLabOptions& o) {
  std::ostringstream out;
  out << "leaves " << o.shape.leaves << " spines " << o.shape.spines << " hosts-per-leaf "
      << o.shape.hosts_per_leaf << " switch-ports " << o.shape.switch_ports << " sms "
      << o.subnet_managers << " polling-ms " << o.sm_polling_timeout_ms << " retries "
      << o.sm_polling_retries << " preload " << o.preload << "\n";
  return out.str();
}

}  // namespace

IbLab::IbLab(sys::CommandRunner& runner, sys::DaemonControl& daemons, IbLabOptions options)
    : runner_(runner), daemons_(daemons), options_(std::move(options)) {}

std::string IbLab::fabricFile() const { return fabricFilePath(options_.state_dir, options_.name); }

Status IbLab::checkPrerequisites() {
  FC_RETURN_IF_ERROR(checkIbLabOptions(options_));
  if (geteuid() != 0) {
    return Status(StatusCode::kPermissionDenied,
                  "lab up --kind ib needs root to create its network namespace; run it as root");
  }
  std::string missing;
  for (const auto& [tool, package] : kTools) {
    if (!isOnPath(tool))
      missing += std::string(missing.empty() ? "" : ", ") + tool + " (" + package + ")";
  }
  if (!std::filesystem::exists(options_.preload)) {
    missing += std::string(missing.empty() ? "" : ", ") + options_.preload + " (ibsim-utils)";
  }
  if (!missing.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "the IB lab needs " + missing + "; deploy/install-deps.sh installs them");
  }
  return Status::ok();
}

core::Result<sys::CommandResult> IbLab::attached(const std::string& node,
                                                 const std::vector<std::string>& argv) {
  const scenarios::IbSimulator sim = simulatorOf(options_);
  std::error_code ec;
  std::filesystem::create_directories(nodeDirectory(sim, node), ec);
  return runner_.run(attachedArgv(sim, node, argv), kToolTimeoutMs);
}

core::Result<ib::IbSubnet> IbLab::discover() {
  auto out = attached(observerNode(options_), {"ibnetdiscover"});
  if (!out.isOk()) return out.status();
  if (out->exit_code != 0) {
    return Status(StatusCode::kUnavailable,
                  "ibnetdiscover from " + observerNode(options_) + " failed: " + out->err);
  }
  return ib::parseIbnetdiscover(out->out);
}

std::vector<ObservedSm> IbLab::observeSubnetManagers(const ib::IbSubnet& subnet) {
  return observeSubnetManagers(subnet, placeSubnetManagers(options_));
}

std::vector<ObservedSm> IbLab::observeSubnetManagers(
    const ib::IbSubnet& subnet, const std::vector<scenarios::SubnetManagerInstance>& sms) {
  std::vector<ObservedSm> observed;
  for (const scenarios::SubnetManagerInstance& sm : sms) {
    ObservedSm o{sm, std::nullopt, ""};
    std::optional<uint16_t> lid;
    for (const ib::IbLink& link : subnet.links) {
      for (const ib::IbEnd* end : {&link.a, &link.b}) {
        const ib::IbNode* node = ib::findNode(subnet, end->node_guid);
        if (node != nullptr && node->description == sm.host && end->lid) lid = end->lid;
      }
    }
    if (!lid) {
      o.problem = "its port on " + sm.host + " has no LID yet";
    } else {
      auto out = attached(observerNode(options_), {"sminfo", std::to_string(*lid)});
      if (!out.isOk()) {
        o.problem = out.status().message();
      } else {
        auto reply = ib::parseSminfo(out->out);
        if (reply.isOk()) {
          o.reply = *reply;
        } else {
          o.problem = "no SMInfo answer from LID " + std::to_string(*lid);
        }
      }
    }
    observed.push_back(std::move(o));
  }
  return observed;
}

std::string IbLab::deadDaemon() {
  for (const Started& s : started_) {
    if (!daemons_.alive(s.pid)) return s.what + " exited: " + logTail(s.log);
  }
  return "";
}

Status IbLab::startSimulator(const Progress& progress) {
  const scenarios::IbSimulator sim = simulatorOf(options_);
  FC_RETURN_IF_ERROR(writeText(sim.dir + "/net", ib::ibsimNetFile(options_.shape)));
  if (::mkfifo(sim.console.c_str(), 0600) != 0 && errno != EEXIST) {
    return Status(StatusCode::kInternal, "cannot make ibsim's console FIFO " + sim.console, errno);
  }
  sys::DaemonSpec spec;
  spec.argv = {"ibsim", "-s", sim.dir + "/net"};
  spec.cwd = sim.dir;
  spec.netns = sim.netns;
  spec.stdin_path = sim.console;  // read-write: ibsim never sees an end of file
  spec.log_path = sim.dir + "/ibsim.log";
  auto pid = daemons_.start(spec);
  if (!pid.isOk()) return pid.status();
  started_.push_back({"ibsim", *pid, spec.log_path, /*sm=*/false});
  const Clock::time_point start = Clock::now();
  while (readTextFile(spec.log_path).find("sim>") == std::string::npos) {
    if (const std::string dead = deadDaemon(); !dead.empty()) {
      return Status(StatusCode::kUnavailable, dead);
    }
    if (secondsSince(start) > 10) {
      return Status(StatusCode::kUnavailable,
                    "ibsim did not come up within 10 s: " + logTail(spec.log_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  progress("ibsim: " + std::to_string(expectedNodes(options_.shape)) + " nodes in namespace " +
           sim.netns + " (pid " + std::to_string(*pid) + ")");
  return Status::ok();
}

Status IbLab::startSubnetManagers(const Progress& progress,
                                  const std::vector<scenarios::SubnetManagerInstance>& sms) {
  const scenarios::IbSimulator sim = simulatorOf(options_);
  for (const scenarios::SubnetManagerInstance& sm : sms) {
    const std::string dir = sim.dir + "/" + sm.name;
    std::filesystem::create_directories(dir);
    FC_RETURN_IF_ERROR(writeText(sm.config, openSmConfig(options_, sm, dir)));
    sys::DaemonSpec spec;
    spec.argv = {"opensm", "-F", sm.config};
    spec.env = attachedEnvironment(sim, sm.host, dir);
    spec.cwd = dir;
    spec.netns = sim.netns;
    spec.log_path = dir + "/opensm.out";
    auto pid = daemons_.start(spec);
    if (!pid.isOk()) return pid.status();
    started_.push_back(
        {sm.name + " (OpenSM on " + sm.host + ")", *pid, dir + "/opensm.log", /*sm=*/true});
    progress(sm.name + ": OpenSM on " + sm.host + ", priority " + std::to_string(sm.priority) +
             " (pid " + std::to_string(*pid) + ")");
  }
  return Status::ok();
}

void IbLab::stopSubnetManagers() {
  for (const Started& s : started_) {
    if (s.sm) daemons_.terminate(s.pid, kSmGraceMs);
  }
  std::erase_if(started_, [](const Started& s) { return s.sm; });
}

core::Result<ib::IbSubnet> IbLab::waitForSubnet(
    const Progress& progress, const std::vector<scenarios::SubnetManagerInstance>& running,
    int timeout_ms) {
  const Clock::time_point start = Clock::now();
  std::string last_seen = "nothing answered yet";
  bool reported_discovery = false;
  while (true) {
    if (const std::string dead = deadDaemon(); !dead.empty()) {
      return Status(StatusCode::kUnavailable, dead);
    }
    auto subnet = discover();
    if (!subnet.isOk()) {
      last_seen = subnet.status().message();
    } else if (subnet->nodes.size() != expectedNodes(options_.shape) ||
               subnet->links.size() != expectedLinks(options_.shape)) {
      last_seen = "ibnetdiscover found " + std::to_string(subnet->nodes.size()) + " of " +
                  std::to_string(expectedNodes(options_.shape)) + " nodes and " +
                  std::to_string(subnet->links.size()) + " of " +
                  std::to_string(expectedLinks(options_.shape)) + " cables";
    } else {
      size_t without_lid = 0;
      for (const ib::IbLink& link : subnet->links) {
        without_lid += !link.a.lid.value_or(0) || !link.b.lid.value_or(0);
      }
      if (without_lid > 0) {
        last_seen = std::to_string(without_lid) + " cables still have an end without a LID";
      } else {
        if (!reported_discovery) {
          progress("subnet: every node and cable has a LID after " +
                   secondsText(secondsSince(start)));
          reported_discovery = true;
        }
        std::string states;
        bool settled = true;
        for (const ObservedSm& o : observeSubnetManagers(*subnet, running)) {
          const bool top = o.sm.name == "sm0";
          const ib::SmState want = top ? ib::SmState::kMaster : ib::SmState::kStandby;
          std::string state = o.reply ? ib::describe(o.reply->state) : o.problem;
          if (o.reply && o.reply->priority != o.sm.priority) {
            state += " with priority " + std::to_string(o.reply->priority);
          }
          states += std::string(states.empty() ? "" : ", ") + o.sm.name + " on " + o.sm.host +
                    " (priority " + std::to_string(o.sm.priority) + ") " + state;
          settled =
              settled && o.reply && o.reply->state == want && o.reply->priority == o.sm.priority;
        }
        last_seen = states;
        if (settled) {
          progress("subnet up after " + secondsText(secondsSince(start)) + ": " + states);
          return std::move(*subnet);
        }
      }
    }
    if (secondsSince(start) * 1000 > timeout_ms) {
      return Status(StatusCode::kUnavailable, "the IB subnet did not come up within " +
                                                  secondsText(timeout_ms / 1000.0) +
                                                  "; last seen: " + last_seen);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
}

core::Result<scenarios::Fabric> IbLab::up(const Progress& progress) {
  FC_RETURN_IF_ERROR(checkPrerequisites());
  const scenarios::IbSimulator sim = simulatorOf(options_);
  auto current = status();
  if (!current.isOk()) return current.status();
  if (current->up && readTextFile(sim.dir + "/options") == optionsRecord(options_)) {
    auto subnet = discover();
    auto fabric = readFabricFile(fabricFile());
    if (subnet.isOk() && fabric) {
      auto parsed = scenarios::fabricFromJson(*fabric);
      if (parsed.isOk()) {
        progress("IB lab " + options_.name + " is already up");
        return parsed;
      }
    }
  }
  if (current->netns_present || std::filesystem::exists(sim.dir)) {
    progress("removing the previous IB lab " + options_.name);
    FC_RETURN_IF_ERROR(down(progress));
  }
  std::error_code ec;
  std::filesystem::create_directories(sim.dir, ec);
  if (ec) return Status(StatusCode::kInternal, "cannot create " + sim.dir + ": " + ec.message());
  FC_RETURN_IF_ERROR(addSwitchNamespace(runner_, sim.netns, {}));
  auto built = [&]() -> core::Result<scenarios::Fabric> {
    FC_RETURN_IF_ERROR(startSimulator(progress));
    // The master first, then the standbys once it rules the subnet: started together, OpenSM
    // 3.3.23 has been seen here to leave every port without a LID for over a minute. A subnet
    // that still does not come up gets its SMs started again once.
    const std::vector<scenarios::SubnetManagerInstance> sms = placeSubnetManagers(options_);
    const std::vector<scenarios::SubnetManagerInstance> master(sms.begin(), sms.begin() + 1);
    const int attempt_ms = std::max(1000, options_.ready_timeout_ms / 2);
    core::Result<ib::IbSubnet> subnet = Status(StatusCode::kUnavailable, "not started");
    for (int attempt = 1; attempt <= 2; ++attempt) {
      FC_RETURN_IF_ERROR(startSubnetManagers(progress, master));
      subnet = waitForSubnet(progress, master, attempt_ms);
      if (subnet.isOk() && sms.size() > 1) {
        const std::vector<scenarios::SubnetManagerInstance> standbys(sms.begin() + 1, sms.end());
        FC_RETURN_IF_ERROR(startSubnetManagers(progress, standbys));
        subnet = waitForSubnet(progress, sms, attempt_ms);
      }
      if (subnet.isOk() || attempt == 2 || !deadDaemon().empty()) break;
      progress(subnet.status().message() + ": starting the subnet managers again");
      stopSubnetManagers();
    }
    if (!subnet.isOk()) return subnet.status();
    auto fabric = describeIbLab(options_, *subnet);
    if (!fabric.isOk()) return fabric.status();
    FC_RETURN_IF_ERROR(writeText(sim.dir + "/options", optionsRecord(options_)));
    FC_RETURN_IF_ERROR(writeFabricFile(options_.state_dir, options_.name, *fabric));
    return fabric;
  }();
  if (!built.isOk()) {
    // Nothing half-built stays: the SM logs' tails are in the message already.
    (void)down([](const std::string&) {});
    return built.status();
  }
  progress("fabric " + options_.name + " registered: " + std::to_string(built->hosts.size()) +
           " channel adapters, " + std::to_string(built->switches.size()) + " switches, " +
           std::to_string(built->ib->subnet_managers.size()) + " subnet managers");
  return built;
}

core::Result<std::vector<pid_t>> IbLab::namespacePids() {
  auto out = runner_.run({"ip", "netns", "pids", subnetNamespace(options_)});
  if (!out.isOk()) return out.status();
  std::vector<pid_t> pids;
  std::istringstream lines(out->out);
  for (long pid = 0; lines >> pid;) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

Status IbLab::down(const Progress& progress) {
  const scenarios::IbSimulator sim = simulatorOf(options_);
  auto present = namespacesWithPrefix(runner_, sim.netns);
  if (!present.isOk()) return present.status();
  bool netns_present = false;
  for (const std::string& ns : *present) netns_present = netns_present || ns == sim.netns;
  if (netns_present) {
    auto pids = namespacePids();
    if (!pids.isOk()) return pids.status();
    // The SMs first, while their ibsim still answers them; then the rest (ibsim).
    std::vector<pid_t> sms;
    std::vector<pid_t> others;
    for (pid_t pid : *pids) {
      (daemons_.commandName(pid) == "opensm" ? sms : others).push_back(pid);
    }
    int ended = 0;
    for (const auto* group : {&sms, &others}) {
      for (pid_t pid : *group) {
        if (!daemons_.terminate(pid, kSmGraceMs)) {
          return Status(StatusCode::kInternal, "process " + std::to_string(pid) + " in namespace " +
                                                   sim.netns + " would not end");
        }
        ++ended;
      }
    }
    FC_RETURN_IF_ERROR(runIp(runner_, {"netns", "del", sim.netns}, {}));
    progress("ended " + std::to_string(ended) + " processes and removed namespace " + sim.netns);
  }
  started_.clear();
  std::error_code ec;
  if (std::filesystem::exists(sim.dir)) {
    std::filesystem::remove_all(sim.dir, ec);
    if (ec) return Status(StatusCode::kInternal, "cannot remove " + sim.dir + ": " + ec.message());
    progress("removed " + sim.dir);
  }
  if (std::filesystem::remove(fabricFile(), ec)) progress("removed " + fabricFile());
  return Status::ok();
}

core::Result<IbLabStatus> IbLab::status() {
  IbLabStatus st;
  st.fabric_file = fabricFile();
  auto present = namespacesWithPrefix(runner_, subnetNamespace(options_));
  if (!present.isOk()) return present.status();
  for (const std::string& ns : *present) {
    st.netns_present = st.netns_present || ns == subnetNamespace(options_);
  }
  bool simulator = false;
  if (st.netns_present) {
    auto pids = namespacePids();
    if (!pids.isOk()) return pids.status();
    st.processes = static_cast<int>(pids->size());
    for (pid_t pid : *pids) {
      simulator = simulator || daemons_.commandName(pid) == "ibsim";
    }
  }
  st.up = st.netns_present && simulator && std::filesystem::exists(st.fabric_file);
  return st;
}

}  // namespace fabric_chaos::lab
