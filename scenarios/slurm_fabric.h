#pragma once
// What a fabric whose hosts are Slurm nodes adds to its description (JSON "slurm",
// docs/workloads.md): how the controller submits a job step there, and which Slurm node each
// fabric host is. A scenario with workload.launcher "slurm" needs it. `lab up --with-slurm` writes
// it for the namespace lab; on a real cluster the operator does. Pure data and its codec; safe
// from any thread.

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace fabric_chaos::scenarios {

struct SlurmCluster {
  // The slurm.conf srun and scancel read (SLURM_CONF); "" = Slurm's default (/etc/slurm).
  std::string conf;
  // The network namespace srun and scancel run in: the namespace lab's controller namespace,
  // the only one that reaches both slurmctld and the nodes. "" = the controller's own.
  std::string submit_netns;
  std::string partition;  // "" = the cluster's default partition
  // fabric-chaos at the same path on every node (it wraps each rank); "" = the controller's own.
  std::string binary;
  // Fabric host -> Slurm node name; a host not listed is the node of its own name.
  std::map<std::string, std::string> nodes;

  std::string nodeOf(const std::string& host) const;
  bool operator==(const SlurmCluster&) const = default;
};

// {"conf"?, "submit_netns"?, "partition"?, "binary"?, "nodes"?: {"h0": "node017"}}. Strict:
// unknown fields, a relative conf or binary path, a namespace or node name Slurm or iproute2
// would refuse are kInvalidArgument naming the field under "slurm". The caller checks that the
// node map names its own hosts.
core::Result<SlurmCluster> slurmClusterFromJson(const nlohmann::json& doc);
nlohmann::json toJson(const SlurmCluster& slurm);

}  // namespace fabric_chaos::scenarios
