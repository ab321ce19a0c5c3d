#pragma once
// The single list of fault kinds. makeRegistry() is the only place injectors are constructed;
// it probes the kernel once to choose backends (netem or nftables for packet loss, or the one
// RegistryOptions forces). Read-only
// after construction, so any thread may use it.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "injectors/injector.h"
#include "injectors/loss/packet_loss.h"

namespace fabric_chaos::sys {
class DaemonControl;
class Dcb;
class Emitters;
class Forwarding;
class IbPortCommand;
class IpConfig;
class LinkControl;
class Nftables;
class PfcSwitchControl;
class Qdiscs;
class RdmaDeviceControl;
class VerbsShimChannel;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class Registry {
 public:
  void add(std::unique_ptr<Injector> injector);
  Injector* find(const std::string& kind) const;  // nullptr when unknown
  std::vector<std::string> kinds() const;         // sorted
  std::vector<KindInfo> capabilities() const;

 private:
  std::map<std::string, std::unique_ptr<Injector>> injectors_;
};

struct SysAdapters {
  sys::LinkControl* links = nullptr;
  sys::Nftables* nftables = nullptr;
  sys::Qdiscs* qdiscs = nullptr;
  sys::Emitters* emitters = nullptr;              // long-running kinds' processes (pfc_storm)
  sys::Forwarding* forwarding = nullptr;          // the switches' FIB lookups (hot_spot)
  sys::Dcb* dcb = nullptr;                        // NICs' IEEE DCB PFC settings (pfc_config)
  sys::PfcSwitchControl* pfc_switches = nullptr;  // lab switches' PFC agents (pfc_config,
                                                  // pfc_watchdog)
  // OpenSM and ibsim processes (sm_failover, the IB port kinds); null leaves those kinds out.
  sys::DaemonControl* daemons = nullptr;
  // Real subnets' switch ports (ib_link_down, ib_link_flap); null leaves them to the IB lab.
  sys::IbPortCommand* ib_ports = nullptr;
  // The control sockets of this host's shim-loaded RDMA programs (the verbs_* kinds); null leaves
  // those kinds out.
  sys::VerbsShimChannel* verbs_shims = nullptr;
  // This host's RDMA devices, and the IP configuration of their netdevs (the rdma_* device kinds,
  // which also need `links`); null leaves those kinds out.
  sys::RdmaDeviceControl* rdma_devices = nullptr;
  sys::IpConfig* ip_config = nullptr;
};

struct RegistryOptions {
  // packet_loss's default backend (`--loss-backend`): nullopt chooses netem when the kernel has
  // it, else nftables. A forced backend the kernel lacks leaves packet_loss unavailable with the
  // reason (faults that name the other backend in params still work); it never fails start-up.
  std::optional<LossBackend> loss_backend;
  // This program, whose subcommands long-running kinds start as emitters (`pfc-emit`). "" leaves
  // those kinds unavailable.
  std::string self_exe = {};
};

// Probes the kernel through the adapters and registers every fault family.
std::unique_ptr<Registry> makeRegistry(const SysAdapters& adapters,
                                       const RegistryOptions& options = {});

}  // namespace fabric_chaos::injectors
