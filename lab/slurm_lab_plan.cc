#include "lab/slurm_lab_plan.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <sstream>

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;

constexpr int kControllerOctet = 250;  // above any star host (2..64 hosts: .1 to .64)
constexpr char kSwitchPort[] = "pctl";
constexpr char kPartition[] = "lab";
// sockaddr_un's sun_path is 108 bytes with its terminating NUL.
constexpr size_t kMaxSocketPath = 107;

Status invalid(const std::string& why) { return Status(StatusCode::kInvalidArgument, why); }

bool isLetterOrDigit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// What a NodeName, a lab name or a namespace prefix may be: Slurm's hostlist expressions and
// slurm.conf lines give '[', ',', '=', '#', blanks and the like a meaning of their own.
bool plainName(const std::string& name, const std::string& extra) {
  return !name.empty() && name.size() <= 63 && std::all_of(name.begin(), name.end(), [&](char c) {
    return isLetterOrDigit(c) || extra.find(c) != std::string::npos;
  });
}

// An RFC 1123 label: what a short hostname is.
bool hostnameLabel(const std::string& name) {
  return plainName(name, "-") && name.front() != '-' && name.back() != '-';
}

// "10.200.0": three decimal octets.
bool threeOctets(const std::string& subnet) {
  std::istringstream parts(subnet);
  std::string part;
  int count = 0;
  while (std::getline(parts, part, '.')) {
    int value = -1;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || part.size() > 3 || ec != std::errc() || end != part.data() + part.size() ||
        value < 0 || value > 255) {
      return false;
    }
    ++count;
  }
  return count == 3 && subnet.back() != '.';
}

// The last octet of `address` when it lies in `subnet`; nullopt otherwise.
std::optional<int> hostOctet(const std::string& subnet, const std::string& address) {
  const std::string head = subnet + ".";
  if (address.rfind(head, 0) != 0) return std::nullopt;
  const std::string tail = address.substr(head.size());
  int value = -1;
  const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), value);
  if (tail.empty() || ec != std::errc() || end != tail.data() + tail.size()) return std::nullopt;
  return value;
}

// The hostname, subnet and timeout: what only `up` needs.
Status checkClusterOptions(const SlurmLabOptions& options) {
  if (options.hostname.empty()) {
    return invalid(
        "cannot tell this machine's hostname, which Slurm needs as its controller's "
        "(SlurmctldHost)");
  }
  if (!hostnameLabel(options.hostname)) {
    return invalid("this machine's hostname \"" + options.hostname +
                   "\" is not a short hostname (letters, digits and inner '-', at most 63), so "
                   "slurmctld cannot be told it is the controller (SlurmctldHost)");
  }
  if (!threeOctets(options.subnet)) {
    return invalid("the lab's subnet must be three octets such as 10.200.0, not \"" +
                   options.subnet + "\"");
  }
  if (options.ready_timeout_ms <= 0) {
    return invalid("the Slurm cluster's ready timeout must be positive");
  }
  return Status::ok();
}

// Every setting but the nodes is the measured working set of docs/lab.md: everything as root, no
// cgroups, no accounting; a finished job leaves a line in the job completion log.
std::string confText(const SlurmLabPlan& plan, const std::string& hostname) {
  const SlurmLabLayout& l = plan.layout;
  std::ostringstream out;
  out << "# Written by `fabric-chaos lab up --with-slurm`; removed by `lab down`.\n"
      << "ClusterName=fclab\n"
      << "SlurmctldHost=" << hostname << "(" << plan.controller_address << ")\n"
      << "AuthType=auth/munge\n"
      << "AuthInfo=socket=" << l.munge_socket << "\n"
      << "CredType=cred/munge\n"
      << "SlurmUser=root\n"
      << "SlurmdUser=root\n"
      << "StateSaveLocation=" << l.state_save_dir << "\n"
      << "SlurmdSpoolDir=" << l.spool_dir << "/%n\n"
      << "SlurmctldPidFile=" << l.dir << "/slurmctld.pid\n"
      << "SlurmdPidFile=" << l.spool_dir << "/slurmd-%n.pid\n"
      << "SlurmctldLogFile=" << l.slurmctld_log << "\n"
      << "SlurmdLogFile=" << l.log_dir << "/slurmd-%n.log\n"
      << "ProctrackType=proctrack/linuxproc\n"
      << "TaskPlugin=task/none\n"
      << "JobAcctGatherType=jobacct_gather/none\n"
      << "AccountingStorageType=accounting_storage/none\n"
      << "JobCompType=jobcomp/filetxt\n"
      << "JobCompLoc=" << l.jobcomp << "\n"
      << "SelectType=select/cons_tres\n"
      << "SelectTypeParameters=CR_Core\n"
      << "MpiDefault=none\n"
      << "ReturnToService=2\n"
      << "SlurmctldPort=6817\n"
      << "SlurmdPort=6818\n"
      << "SchedulerType=sched/builtin\n"
      << "SlurmctldTimeout=30\n"
      << "SlurmdTimeout=30\n"
      << "InactiveLimit=0\n"
      << "KillWait=5\n"
      << "MessageTimeout=10\n"
      << "MailProg=/bin/true\n";
  std::string node_list;
  for (const SlurmNodePlan& node : plan.nodes) {
    out << "NodeName=" << node.node << " NodeAddr=" << node.address << " CPUs=1 State=UNKNOWN\n";
    node_list += (node_list.empty() ? "" : ",") + node.node;
  }
  out << "PartitionName=" << kPartition << " Nodes=" << node_list
      << " Default=YES MaxTime=INFINITE State=UP\n";
  return out.str();
}

std::vector<std::string> slurmEnvironment(const SlurmLabLayout& layout) {
  return {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_CONF=" + layout.conf};
}

}  // namespace

std::string SlurmLabLayout::nodeSpool(const std::string& node) const {
  return spool_dir + "/" + node;
}

std::string SlurmLabLayout::slurmdLog(const std::string& node) const {
  return log_dir + "/slurmd-" + node + ".log";
}

std::string SlurmLabLayout::daemonOutput(const std::string& what) const {
  return log_dir + "/" + what + ".out";
}

SlurmLabLayout slurmLabLayout(const SlurmLabOptions& options) {
  SlurmLabLayout l;
  l.dir = options.state_dir + "/slurm/" + options.name;
  l.conf = l.dir + "/slurm.conf";
  l.munge_key = l.dir + "/munge.key";
  l.munge_dir = l.dir + "/munge";
  l.munge_socket = l.munge_dir + "/munge.socket.2";
  l.munge_pid = l.munge_dir + "/munged.pid";
  l.munge_seed = l.munge_dir + "/munged.seed";
  l.spool_dir = l.dir + "/spool";
  l.state_save_dir = l.dir + "/state";
  l.log_dir = l.dir + "/log";
  l.munge_log = l.log_dir + "/munged.log";
  l.slurmctld_log = l.log_dir + "/slurmctld.log";
  l.jobcomp = l.log_dir + "/jobcomp.txt";
  l.controller_netns = slurmControllerNamespace(options.prefix);
  return l;
}

Status checkSlurmLabLayout(const SlurmLabOptions& options) {
  if (!plainName(options.name, "-_.") || options.name == "." || options.name == "..") {
    return invalid(
        "the lab's name must be letters, digits, '-', '_' or '.' for a Slurm cluster, "
        "not \"" +
        options.name + "\"");
  }
  if (!plainName(options.prefix, "-_")) {
    return invalid(
        "the lab's prefix must be letters, digits, '-' or '_' for a Slurm cluster, "
        "not \"" +
        options.prefix + "\"");
  }
  const std::string& dir = options.state_dir;
  if (dir.empty() || dir.front() != '/') {
    return invalid("the state directory must be an absolute path for slurm.conf, not \"" + dir +
                   "\"");
  }
  if (dir.find_first_of(" \t\n\r#,%\"'") != std::string::npos) {
    return invalid("the state directory \"" + dir +
                   "\" has a blank, '#', ',', '%' or a quote, which slurm.conf would not read "
                   "back as the same path");
  }
  const std::string socket = slurmLabLayout(options).munge_socket;
  if (socket.size() > kMaxSocketPath) {
    return invalid("the munge socket path " + socket + " is " + std::to_string(socket.size()) +
                   " characters, more than a unix socket takes (107): choose a shorter state "
                   "directory");
  }
  return Status::ok();
}

core::Result<SlurmLabPlan> planSlurmLab(const scenarios::Fabric& fabric,
                                        const SlurmLabOptions& options) {
  FC_RETURN_IF_ERROR(checkSlurmLabLayout(options));
  FC_RETURN_IF_ERROR(checkClusterOptions(options));
  SlurmLabPlan plan;
  plan.layout = slurmLabLayout(options);
  if (fabric.switches.size() != 1 || !fabric.switch_links.empty() ||
      fabric.switches.front().bridge.empty()) {
    return invalid(
        "a Slurm cluster on the lab needs the star topology (one switch with a bridge "
        "for the controller to join); fabric " +
        fabric.name + " has " + std::to_string(fabric.switches.size()) + " switches and " +
        std::to_string(fabric.switch_links.size()) + " switch links");
  }
  if (fabric.hosts.empty()) return invalid("fabric " + fabric.name + " has no hosts to be nodes");
  const scenarios::Switch& sw = fabric.switches.front();
  plan.switch_netns = sw.netns;
  plan.bridge = sw.bridge;
  plan.switch_port = kSwitchPort;
  if (std::find(sw.ports.begin(), sw.ports.end(), plan.switch_port) != sw.ports.end()) {
    return invalid("switch " + sw.name + " already has a port " + plan.switch_port +
                   ", the Slurm controller's");
  }
  plan.controller_address = options.subnet + "." + std::to_string(kControllerOctet);
  for (const scenarios::Host& host : fabric.hosts) {
    if (!plainName(host.name, "-_")) {
      return invalid("host \"" + host.name +
                     "\" cannot be a Slurm node name (letters, digits, '-' and '_')");
    }
    const scenarios::Nic* eth0 = nullptr;
    for (const scenarios::Nic& nic : host.nics) {
      if (nic.name == "eth0") eth0 = &nic;
    }
    const std::optional<int> octet =
        eth0 == nullptr ? std::nullopt : hostOctet(options.subnet, eth0->address);
    if (host.netns.empty() || !octet || *octet < 1 || *octet > 254) {
      return invalid("host " + host.name + " needs a namespace and an eth0 address in " +
                     options.subnet + ".0/24 to be a Slurm node");
    }
    if (*octet == kControllerOctet) {
      return invalid("host " + host.name + " has " + eth0->address +
                     ", the Slurm controller's address");
    }
    plan.nodes.push_back({host.name, host.netns, eth0->address});
    plan.cluster.nodes[host.name] = host.name;
  }
  plan.conf_text = confText(plan, options.hostname);
  plan.cluster.conf = plan.layout.conf;
  plan.cluster.submit_netns = plan.layout.controller_netns;
  plan.cluster.partition = kPartition;
  return plan;
}

std::string slurmControllerNamespace(const std::string& prefix) { return prefix + "-slurmctl"; }

std::string shortHostname(const std::string& hostname) {
  return hostname.substr(0, hostname.find('.'));
}

std::vector<std::vector<std::string>> controllerNamespaceCommands(const SlurmLabPlan& plan) {
  const std::string& ctl = plan.layout.controller_netns;
  return {{"netns", "add", ctl},
          {"-n", ctl, "link", "set", "lo", "up"},
          {"-n", ctl, "link", "add", "eth0", "type", "veth", "peer", "name", plan.switch_port,
           "netns", plan.switch_netns},
          {"-n", plan.switch_netns, "link", "set", plan.switch_port, "master", plan.bridge},
          {"-n", plan.switch_netns, "link", "set", plan.switch_port, "up"},
          {"-n", ctl, "addr", "add", plan.controller_address + "/24", "dev", "eth0"},
          {"-n", ctl, "link", "set", "eth0", "up"}};
}

sys::DaemonSpec mungedSpec(const SlurmLabLayout& layout) {
  sys::DaemonSpec spec;
  // --force: munged would refuse the state directory's own permissions (a temporary directory's
  // parent, /run's); the key and socket directory are made as it wants them.
  spec.argv = {"munged",
               "--force",
               "-F",
               "--socket=" + layout.munge_socket,
               "--key-file=" + layout.munge_key,
               "--pid-file=" + layout.munge_pid,
               "--log-file=" + layout.munge_log,
               "--seed-file=" + layout.munge_seed};
  spec.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  spec.cwd = layout.dir;
  spec.log_path = layout.daemonOutput("munged");
  return spec;
}

sys::DaemonSpec slurmctldSpec(const SlurmLabLayout& layout) {
  sys::DaemonSpec spec;
  spec.argv = {"slurmctld", "-D", "-i"};  // -i: start even when a state file cannot be read
  spec.env = slurmEnvironment(layout);
  spec.cwd = layout.dir;
  spec.netns = layout.controller_netns;
  spec.log_path = layout.daemonOutput("slurmctld");
  return spec;
}

sys::DaemonSpec slurmdSpec(const SlurmLabLayout& layout, const SlurmNodePlan& node) {
  sys::DaemonSpec spec;
  spec.argv = {"slurmd", "-D", "-N", node.node};
  spec.env = slurmEnvironment(layout);
  spec.cwd = layout.nodeSpool(node.node);
  spec.netns = node.netns;
  spec.log_path = layout.daemonOutput("slurmd-" + node.node);
  return spec;
}

std::vector<std::string> clientArgv(const SlurmLabLayout& layout,
                                    const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"nsenter", "--net=/run/netns/" + layout.controller_netns, "env",
                                  "SLURM_CONF=" + layout.conf};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::vector<std::string> sinfoNodeStatesArgv(const SlurmLabLayout& layout) {
  return clientArgv(layout, {"sinfo", "-h", "-N", "-o", "%N %T"});
}

std::string nodesNotIdle(const std::string& sinfo_out, const std::vector<std::string>& nodes) {
  std::map<std::string, std::string> state;
  std::istringstream lines(sinfo_out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string node;
    std::string value;
    if (fields >> node >> value) state[node] = value;
  }
  std::string not_idle;
  for (const std::string& node : nodes) {
    auto it = state.find(node);
    const std::string seen = it == state.end() ? "missing" : it->second;
    if (seen != "idle") not_idle += (not_idle.empty() ? "" : ", ") + node + " " + seen;
  }
  return not_idle;
}

std::vector<std::string> nodesInSlurmConf(const std::string& conf_text) {
  std::vector<std::string> nodes;
  std::istringstream lines(conf_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("NodeName=", 0) != 0) continue;
    const std::string rest = line.substr(9);
    nodes.push_back(rest.substr(0, rest.find_first_of(" \t")));
  }
  return nodes;
}

std::string logTailOneLine(const std::string& text, int lines) {
  std::vector<std::string> all;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) all.push_back(line);
  }
  if (all.empty()) return "(empty)";
  std::string tail;
  const size_t first = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0;
  for (size_t i = first; i < all.size(); ++i) tail += (tail.empty() ? "" : " | ") + all[i];
  return tail;
}

}  // namespace fabric_chaos::lab
