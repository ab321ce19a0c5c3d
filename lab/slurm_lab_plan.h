#pragma once
// The plan of a Slurm cluster made of the namespace lab's star (lab/slurm_lab.h, `lab up
// --with-slurm`): where its files live, the controller namespace cabled to the star's bridge, the
// daemons and their command lines, the slurm.conf that makes every host namespace a node, the
// "slurm" section the fabric file then carries, and how sinfo's answer reads. Inputs Slurm or the
// lab would refuse are kInvalidArgument, one sentence each. Pure; safe from any thread.

#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/daemon.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

struct SlurmLabOptions {
  std::string name = "netns-lab";   // the lab's name: the files live in <state_dir>/slurm/<name>
  std::string prefix = "fcl";       // the lab's: the controller namespace is <prefix>-slurmctl
  std::string subnet = "10.200.0";  // the lab's: the controller is <subnet>.250 on its bridge
  std::string state_dir = "/run/fabric-chaos";
  // This machine's short hostname (shortHostname): slurmctld starts only on the host its
  // SlurmctldHost names ("This host not a valid controller"), and the controller namespace shares
  // the machine's hostname.
  std::string hostname;
  int ready_timeout_ms = 30000;  // until sinfo shows every node idle
};

// Where everything lives. The options alone decide it, so that `down` and `status` find the
// cluster without the fabric.
struct SlurmLabLayout {
  std::string dir;               // <state_dir>/slurm/<name>
  std::string conf;              // <dir>/slurm.conf (SLURM_CONF of every daemon and client)
  std::string munge_key;         // <dir>/munge.key: 1024 random bytes, mode 0400
  std::string munge_dir;         // <dir>/munge, mode 0755: munged refuses one others may write
  std::string munge_socket;      // <dir>/munge/munge.socket.2, serving every namespace
  std::string munge_pid;         // <dir>/munge/munged.pid
  std::string munge_seed;        // <dir>/munge/munged.seed
  std::string spool_dir;         // <dir>/spool: <node>/ (SlurmdSpoolDir) and slurmd-<node>.pid
  std::string state_save_dir;    // <dir>/state (StateSaveLocation)
  std::string log_dir;           // <dir>/log
  std::string munge_log;         // <log_dir>/munged.log
  std::string slurmctld_log;     // <log_dir>/slurmctld.log
  std::string jobcomp;           // <log_dir>/jobcomp.txt: one line per finished job
  std::string controller_netns;  // <prefix>-slurmctl: slurmctld, and where srun/sinfo run

  std::string nodeSpool(const std::string& node) const;  // <spool_dir>/<node>
  std::string slurmdLog(const std::string& node) const;  // <log_dir>/slurmd-<node>.log
  // Where a daemon's stdout and stderr go (what it says before its own log is open):
  // <log_dir>/<what>.out.
  std::string daemonOutput(const std::string& what) const;
};

SlurmLabLayout slurmLabLayout(const SlurmLabOptions& options);

// kInvalidArgument when the layout would not be the lab's own or slurm.conf could not carry it: a
// name or prefix other than letters, digits, '-', '_' (and '.' in the name), a state directory
// that is not absolute or has blanks, '#', ',', '%' or quotes, a munge socket path too long for a
// unix socket.
core::Status checkSlurmLabLayout(const SlurmLabOptions& options);

// One Slurm node: a host namespace of the star running one slurmd.
struct SlurmNodePlan {
  std::string node;     // NodeName: the fabric host's name ("h0")
  std::string netns;    // where its slurmd runs ("fcl-h0")
  std::string address;  // NodeAddr: its eth0 ("10.200.0.1")
};

struct SlurmLabPlan {
  SlurmLabLayout layout;
  std::string switch_netns;        // the star's switch namespace ("fcl-sw0")
  std::string bridge;              // its bridge ("br0")
  std::string switch_port;         // the controller's port on that bridge ("pctl")
  std::string controller_address;  // <subnet>.250
  std::vector<SlurmNodePlan> nodes;
  std::string conf_text;            // slurm.conf
  scenarios::SlurmCluster cluster;  // the fabric's "slurm"
};

// The plan for the star `fabric` (describeLab's, kStar). kInvalidArgument: a fabric that is not a
// star (one switch with a bridge, no switch links), a host without an eth0 address in the subnet
// or at the controller's .250, a host name Slurm refuses as a NodeName, a hostname that is not a
// short one, a subnet that is not three octets, and whatever checkSlurmLabLayout refuses.
core::Result<SlurmLabPlan> planSlurmLab(const scenarios::Fabric& fabric,
                                        const SlurmLabOptions& options);

// "vm" of "vm.example.org": what Slurm compares SlurmctldHost with.
std::string shortHostname(const std::string& hostname);

// The namespace a lab with this prefix runs slurmctld in: "<prefix>-slurmctl". The namespace
// lab's own checks leave it out of the lab's namespaces (lab/netns_lab.h).
std::string slurmControllerNamespace(const std::string& prefix);

// The `ip` commands (arguments after "ip") that make the controller namespace and cable its eth0
// to a new port of the star's bridge, with the controller's address: created directly inside the
// namespaces, as the star's hosts are (lab/netns_lab.cc).
std::vector<std::vector<std::string>> controllerNamespaceCommands(const SlurmLabPlan& plan);

// The daemons, in the order they start: munged in this namespace (its socket file serves every
// namespace), slurmctld in the controller namespace, one slurmd per node in its host namespace,
// each entered by setns (DaemonSpec::netns): `ip netns exec` would remount /sys, which slurmd
// reads. Each gets SLURM_CONF, and its stdout and stderr in daemonOutput(...).
sys::DaemonSpec mungedSpec(const SlurmLabLayout& layout);
sys::DaemonSpec slurmctldSpec(const SlurmLabLayout& layout);
sys::DaemonSpec slurmdSpec(const SlurmLabLayout& layout, const SlurmNodePlan& node);

// `nsenter --net=/run/netns/<controller> env SLURM_CONF=<conf> <argv...>`: a Slurm client run
// where it reaches slurmctld, with the cluster's configuration.
std::vector<std::string> clientArgv(const SlurmLabLayout& layout,
                                    const std::vector<std::string>& argv);

// sinfo's `-h -N -o "%N %T"`, for nodesNotIdle.
std::vector<std::string> sinfoNodeStatesArgv(const SlurmLabLayout& layout);

// Reads sinfo's "NODE STATE" lines against the nodes the cluster has: "" when every node is
// "idle"; else each one that is not, as sinfo shows it or "missing": "h0 down*, h1 missing".
std::string nodesNotIdle(const std::string& sinfo_out, const std::vector<std::string>& nodes);

// The NodeName= entries of a slurm.conf, in order: the nodes the cluster on disk has.
std::vector<std::string> nodesInSlurmConf(const std::string& conf_text);

// The last `lines` lines of a log, joined with " | " so that they fit in one error sentence;
// "(empty)" when there is nothing.
std::string logTailOneLine(const std::string& text, int lines);

}  // namespace fabric_chaos::lab
