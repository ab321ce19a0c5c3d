#include "injectors/registry.h"

#include "injectors/ib/ib_port_faults.h"
#include "injectors/ib/sm_failover.h"
#include "injectors/link/link_flap.h"
#include "injectors/loss/packet_loss.h"
#include "injectors/netem/netem.h"
#include "injectors/pfc/pfc_config.h"
#include "injectors/pfc/pfc_storm.h"
#include "injectors/pfc/pfc_watchdog.h"
#include "injectors/rdma/rdma_device_fault.h"
#include "injectors/sys/nftables.h"
#include "injectors/sys/qdisc.h"
#include "injectors/traffic/hot_spot.h"
#include "injectors/traffic/incast.h"
#include "injectors/verbs/verbs_shim_fault.h"

namespace fabric_chaos::injectors {

void Registry::add(std::unique_ptr<Injector> injector) {
  std::string kind = injector->info().kind;
  injectors_[kind] = std::move(injector);
}

Injector* Registry::find(const std::string& kind) const {
  auto it = injectors_.find(kind);
  return it == injectors_.end() ? nullptr : it->second.get();
}

std::vector<std::string> Registry::kinds() const {
  std::vector<std::string> out;
  out.reserve(injectors_.size());
  for (const auto& [kind, injector] : injectors_) out.push_back(kind);
  return out;
}

std::vector<KindInfo> Registry::capabilities() const {
  std::vector<KindInfo> out;
  out.reserve(injectors_.size());
  for (const auto& [kind, injector] : injectors_) out.push_back(injector->info());
  return out;
}

namespace {

// One probe of sch_netem serves both kinds that use it.
struct NetemProbe {
  bool available = false;
  std::string problem;  // why not, when unavailable
};

NetemProbe probeNetem(const SysAdapters& adapters) {
  if (adapters.qdiscs == nullptr) return {false, "no qdisc adapter"};
  core::Status netem = adapters.qdiscs->probeKind("netem");
  if (netem.isOk()) return {true, ""};
  return {false, netem.code() == core::StatusCode::kNotSupported
                     ? "sch_netem is not in this kernel"
                     : "netem probe failed (" + netem.message() + ")"};
}

// Probes both packet-loss backends (each fault may name either) and picks the default: the forced
// one, else netem when the kernel has it (it also offers correlation), else an nftables netdev
// table with a numgen random drop rule. The reason strings are what capabilities show.
std::unique_ptr<Injector> makePacketLoss(const SysAdapters& adapters, const NetemProbe& netem,
                                         const RegistryOptions& options) {
  LossBackends backends;
  backends.netem = netem.available;
  backends.netem_problem = netem.problem;
  std::string nft_problem = "no nftables adapter";  // how the auto reason says it
  if (adapters.nftables != nullptr) {
    core::Status nft = adapters.nftables->probe(nftLossProbeScript());
    backends.nftables = nft.isOk();
    nft_problem = "nftables cannot drop packets either (" + nft.message() + ")";
    backends.nftables_problem = "nftables cannot drop packets (" + nft.message() + ")";
  } else {
    backends.nftables_problem = nft_problem;
  }
  if (backends.nftables) backends.nftables_problem.clear();

  if (options.loss_backend == LossBackend::kNetem) {
    backends.preferred = LossBackend::kNetem;
    backends.reason = backends.netem ? "forced by --loss-backend netem"
                                     : "forced by --loss-backend netem, but " + netem.problem;
  } else if (options.loss_backend == LossBackend::kNftables) {
    backends.preferred = LossBackend::kNftables;
    backends.reason = backends.nftables
                          ? "forced by --loss-backend nftables"
                          : "forced by --loss-backend nftables, but " + backends.nftables_problem;
  } else if (backends.netem) {
    backends.preferred = LossBackend::kNetem;
  } else if (backends.nftables) {
    backends.preferred = LossBackend::kNftables;
    backends.reason = netem.problem + "; using nftables numgen random drop";
  } else {
    backends.preferred = LossBackend::kNone;
    backends.reason = netem.problem + "; " + nft_problem;
  }
  return std::make_unique<PacketLoss>(std::move(backends), adapters.qdiscs, adapters.nftables);
}

}  // namespace

std::unique_ptr<Registry> makeRegistry(const SysAdapters& adapters,
                                       const RegistryOptions& options) {
  auto registry = std::make_unique<Registry>();
  const NetemProbe netem = probeNetem(adapters);
  registry->add(std::make_unique<LinkFlap>(adapters.links));
  registry->add(makePacketLoss(adapters, netem, options));
  registry->add(std::make_unique<Netem>(adapters.qdiscs, netem.available, netem.problem));
  registry->add(std::make_unique<PfcStorm>(adapters.links, adapters.emitters, options.self_exe));
  registry->add(std::make_unique<PfcConfig>(adapters.dcb, adapters.pfc_switches));
  registry->add(std::make_unique<PfcWatchdog>(adapters.pfc_switches));
  registry->add(std::make_unique<Incast>(adapters.links, adapters.emitters, options.self_exe));
  registry->add(std::make_unique<HotSpot>(adapters.links, adapters.emitters, adapters.forwarding,
                                          options.self_exe));
  if (adapters.daemons != nullptr) {
    registry->add(std::make_unique<SmFailover>(adapters.daemons));
    for (IbPortFaultKind kind :
         {IbPortFaultKind::kLinkDown, IbPortFaultKind::kLinkFlap, IbPortFaultKind::kMadLoss}) {
      registry->add(std::make_unique<IbPortFault>(kind, adapters.daemons, adapters.ib_ports));
    }
  }
  if (adapters.verbs_shims != nullptr) {
    // One keeper for the five kinds: one thread renews every armed program, and a program held
    // by one kind is known to the others.
    auto leases = std::make_shared<ShimLeaseKeeper>(
        *adapters.verbs_shims, std::chrono::milliseconds(VerbsShimFault::kLeaseMs / 3));
    for (VerbsFaultKind kind : kVerbsFaultKinds) {
      registry->add(std::make_unique<VerbsShimFault>(kind, adapters.verbs_shims, leases));
    }
  }
  if (adapters.rdma_devices != nullptr && adapters.links != nullptr &&
      adapters.ip_config != nullptr) {
    for (RdmaDeviceFaultKind kind : kRdmaDeviceFaultKinds) {
      registry->add(std::make_unique<RdmaDeviceFault>(kind, adapters.rdma_devices, adapters.links,
                                                      adapters.ip_config));
    }
  }
  return registry;
}

}  // namespace fabric_chaos::injectors
