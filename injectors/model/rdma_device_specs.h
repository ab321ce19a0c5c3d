#pragma once
// The RDMA device kinds' declarations (injectors/model/kind_spec.h, docs/faults.md): faults that
// reach any verbs program through the kernel, with no shim, each on one RDMA port target and each
// holding its own part of it exclusively:
// - rdma_port_down: the RoCE port's netdev down (IBV_EVENT_PORT_ERR);
// - rdma_gid_change: the address behind a RoCE GID removed, then restored (IBV_EVENT_GID_CHANGE);
// - rdma_device_remove: a software device (rxe, siw) removed, then re-created on its netdev;
// - rdma_mtu_change: the RoCE port's netdev MTU changed (new QPs see the new path MTU).
// Pure; safe from any thread.

#include <array>
#include <optional>
#include <string_view>

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

enum class RdmaDeviceFaultKind {
  kPortDown,      // rdma_port_down
  kGidChange,     // rdma_gid_change
  kDeviceRemove,  // rdma_device_remove
  kMtuChange,     // rdma_mtu_change
};
inline constexpr std::array<RdmaDeviceFaultKind, 4> kRdmaDeviceFaultKinds = {
    RdmaDeviceFaultKind::kPortDown, RdmaDeviceFaultKind::kGidChange,
    RdmaDeviceFaultKind::kDeviceRemove, RdmaDeviceFaultKind::kMtuChange};

// The netdev MTUs rdma_mtu_change accepts: IPv4's minimum, and the usual jumbo frame.
inline constexpr int64_t kMinRdmaMtu = 576;
inline constexpr int64_t kMaxRdmaMtu = 9000;

const KindSpec& rdmaDeviceFaultSpec(RdmaDeviceFaultKind kind);
// nullopt for kinds that are not RDMA device kinds.
std::optional<RdmaDeviceFaultKind> rdmaDeviceFaultKindOf(std::string_view kind);

}  // namespace fabric_chaos::injectors
