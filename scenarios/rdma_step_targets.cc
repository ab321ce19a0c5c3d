#include "scenarios/rdma_step_targets.h"

#include "injectors/model/kind_spec.h"
#include "scenarios/rank_hosts.h"

namespace fabric_chaos::scenarios {

using core::Status;
using core::StatusCode;

std::optional<core::Result<std::vector<ResolvedTarget>>> resolveRdmaStepTargets(
    const FaultStep& step, const Fabric& fabric, const std::vector<std::string>& workload_hosts) {
  const injectors::KindSpec* spec = injectors::findKindSpec(step.kind);
  const bool rdma_kind = spec != nullptr && spec->target == injectors::TargetType::kRdmaPort;
  const TargetSelector& selector = step.target;
  if (!rdma_kind) {
    if (!selector.rdma_device.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "rdma_device: only the RDMA device kinds (rdma_*) act on an RDMA port; " +
                        step.kind + " does not");
    }
    return std::nullopt;
  }
  if (!selector.sources.empty() || !selector.sink.empty() || !selector.process.empty()) {
    const char* field =
        !selector.sources.empty() ? "sources" : (!selector.sink.empty() ? "sink" : "process");
    return Status(StatusCode::kInvalidArgument,
                  std::string(field) + ": " + step.kind + " acts on an RDMA port, not on " +
                      (selector.process.empty() ? "traffic endpoints" : "processes"));
  }
  const std::string example =
      "({\"rank\": 1, \"rdma_device\": \"rxe0\"} or {\"host\": \"vm1\", "
      "\"rdma_device\": \"rxe0\", \"rdma_port\": 1})";
  if (!selector.rank && selector.host.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  step.kind + " acts on an RDMA port: select a workload rank or a host, with the " +
                      "device " + example + ", not " + selector.describe());
  }
  if (selector.rdma_device.empty()) {
    return Status(StatusCode::kInvalidArgument, "rdma_device: required: " + step.kind +
                                                    " acts on one RDMA device's port " + example +
                                                    "; ibv_devices or rdma link show lists them");
  }
  std::string host = selector.host;
  if (selector.rank) {
    auto of_rank = hostOfRank(*selector.rank, fabric, workload_hosts);
    if (!of_rank.isOk()) return of_rank.status();
    host = *of_rank;
  } else if (fabric.findHost(host) == nullptr) {
    return Status(StatusCode::kUnprocessable, "host " + host + " is not in fabric " + fabric.name);
  }
  ResolvedTarget resolved;
  resolved.host = host;
  resolved.side = LinkSide::kHost;  // the host's own agent acts on its RDMA devices
  resolved.target = injectors::RdmaPortTarget{selector.rdma_device, selector.rdma_port.value_or(1),
                                              selector.gid_index.value_or(0)};
  return std::vector<ResolvedTarget>{std::move(resolved)};
}

}  // namespace fabric_chaos::scenarios
