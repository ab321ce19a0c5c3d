#include "scenarios/process_step_targets.h"

#include "injectors/model/kind_spec.h"
#include "scenarios/rank_hosts.h"

namespace fabric_chaos::scenarios {

using core::Status;
using core::StatusCode;

namespace {

ResolvedTarget onHost(const std::string& host, injectors::ProcessTarget target) {
  ResolvedTarget resolved;
  resolved.host = host;
  resolved.side = LinkSide::kHost;  // the host's own agent acts on its processes
  resolved.target = std::move(target);
  return resolved;
}

}  // namespace

std::optional<core::Result<std::vector<ResolvedTarget>>> resolveProcessStepTargets(
    const FaultStep& step, const Fabric& fabric, const std::vector<std::string>& workload_hosts) {
  const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
  const bool process_kind = spec != nullptr && spec->target == injectors::TargetType::kProcess;
  const TargetSelector& selector = step.target;
  if (!process_kind) {
    if (selector.rank) {
      return Status(
          StatusCode::kInvalidArgument,
          "rank: only kinds that act on processes (verbs_*) or RDMA ports (rdma_*) take a "
          "rank; " +
              step.kind + " does not");
    }
    if (!selector.process.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "process: only kinds that act on processes (verbs_*) take a process name; " +
                        step.kind + " does not");
    }
    return std::nullopt;
  }
  if (!selector.sources.empty() || !selector.sink.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  std::string(selector.sources.empty() ? "sink" : "sources") + ": " + step.kind +
                      " acts on processes and takes no traffic endpoints");
  }
  if (selector.rank) {
    auto host = hostOfRank(*selector.rank, fabric, workload_hosts);
    if (!host.isOk()) return host.status();
    injectors::ProcessTarget target;
    target.rank = *selector.rank;
    return std::vector<ResolvedTarget>{onHost(*host, target)};
  }
  if (selector.host.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  step.kind + " acts on processes: select a workload rank ({\"rank\": 1}) or a " +
                      "host, with a process name or without ({\"host\": \"h1\", \"process\": " +
                      "\"ib_write_bw\"}), not " + selector.describe());
  }
  if (fabric.findHost(selector.host) == nullptr) {
    return Status(StatusCode::kUnprocessable,
                  "host " + selector.host + " is not in fabric " + fabric.name);
  }
  injectors::ProcessTarget target;
  target.name = selector.process;
  return std::vector<ResolvedTarget>{onHost(selector.host, target)};
}

}  // namespace fabric_chaos::scenarios
