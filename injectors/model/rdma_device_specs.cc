#include "injectors/model/rdma_device_specs.h"

#include <utility>

namespace fabric_chaos::injectors {
namespace {

// What the four share: one RDMA port, held exclusively, changed once for the step's window.
KindSpec baseSpec(std::string kind, std::string resource, std::string summary) {
  KindSpec s;
  s.kind = std::move(kind);
  s.summary = std::move(summary);
  s.target = TargetType::kRdmaPort;
  s.resource = std::move(resource);
  s.composition = Composition::kExclusive;
  s.lifecycle = Lifecycle::kInstant;
  s.phases = {PhaseShape::kOneWindow, "", "", ""};
  return s;
}

const KindSpec& portDownSpec() {
  static const KindSpec spec = baseSpec(
      "rdma_port_down", "rdma_port_state",
      "Takes a RoCE port down by taking its netdev administratively down: a NIC port or cable "
      "failing under a running job. Verbs programs get IBV_EVENT_PORT_ERR and their QPs on the "
      "port stop; revert brings the netdev up (IBV_EVENT_PORT_ACTIVE) and re-adds the addresses "
      "and routes the kernel dropped with it.");
  return spec;
}

const KindSpec& gidChangeSpec() {
  static const KindSpec spec = [] {
    KindSpec s = baseSpec(
        "rdma_gid_change", "rdma_gid",
        "Removes the IP address behind a RoCE GID (the one at the target's gid_index, or the "
        "one of the netdev's primary IPv4 address), then restores it: an address renumbered or "
        "lost under a running job. Verbs programs get IBV_EVENT_GID_CHANGE and connections using "
        "the GID break; revert re-adds the address as it was, with the addresses and routes the "
        "kernel dropped with it.");
    s.params = {
        {"gid",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"index", "ipv4"},
         false,
         "index",
         "which GID: index, the one at the target's gid_index; ipv4, the one of the port "
         "netdev's primary IPv4 address, whatever its index (the GID rdma_cm uses for RoCEv2 "
         "over IPv4, and NCCL when NCCL_IB_GID_INDEX is unset). The index can move: the kernel "
         "keeps a removed GID's entry while QPs still use it, so the restored address may come "
         "back under another index"},
    };
    return s;
  }();
  return spec;
}

const KindSpec& deviceRemoveSpec() {
  static const KindSpec spec = baseSpec(
      "rdma_device_remove", "rdma_device",
      "Removes a software RDMA device (Soft-RoCE rxe, siw) and re-creates it on the same netdev: "
      "a device that vanishes (driver reset, hot unplug). While it is gone ibv_get_device_list "
      "does not list it and opens fail. Refused while programs hold it open: rxe and siw cannot "
      "detach them, so the kernel would wait for them to close and none would get "
      "IBV_EVENT_DEVICE_FATAL.");
  return spec;
}

const KindSpec& mtuChangeSpec() {
  static const KindSpec spec = [] {
    KindSpec s = baseSpec(
        "rdma_mtu_change", "rdma_mtu",
        "Changes the MTU of a RoCE port's netdev: a host or switch port reconfigured under a "
        "running job, an MTU mismatch along the path. No async event: existing QPs keep their "
        "path MTU, new ones see the new active_mtu (ibv_query_port). Revert restores the old "
        "MTU.");
    s.params = {
        {"mtu",
         ParamType::kInteger,
         "bytes",
         static_cast<double>(kMinRdmaMtu),
         false,
         static_cast<double>(kMaxRdmaMtu),
         {},
         true,
         nullptr,
         "the netdev's MTU during the fault; the port's active_mtu becomes the largest RoCE MTU "
         "(256..4096) that fits in it with the RoCE headers"},
    };
    return s;
  }();
  return spec;
}

}  // namespace

const KindSpec& rdmaDeviceFaultSpec(RdmaDeviceFaultKind kind) {
  switch (kind) {
    case RdmaDeviceFaultKind::kPortDown:
      return portDownSpec();
    case RdmaDeviceFaultKind::kGidChange:
      return gidChangeSpec();
    case RdmaDeviceFaultKind::kDeviceRemove:
      return deviceRemoveSpec();
    case RdmaDeviceFaultKind::kMtuChange:
      return mtuChangeSpec();
  }
  return portDownSpec();
}

std::optional<RdmaDeviceFaultKind> rdmaDeviceFaultKindOf(std::string_view kind) {
  for (RdmaDeviceFaultKind candidate : kRdmaDeviceFaultKinds) {
    if (rdmaDeviceFaultSpec(candidate).kind == kind) return candidate;
  }
  return std::nullopt;
}

}  // namespace fabric_chaos::injectors
