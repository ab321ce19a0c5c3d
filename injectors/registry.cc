#include "injectors/registry.h"

#include "injectors/link/link_flap.h"
#include "injectors/loss/packet_loss.h"
#include "injectors/netem/netem.h"
#include "injectors/sys/nftables.h"
#include "injectors/sys/qdisc.h"

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

// Chooses the packet-loss backend: netem when the kernel has it (it also offers correlation
// and delay), else an nftables netdev table with a numgen random drop rule.
std::unique_ptr<Injector> makePacketLoss(const SysAdapters& adapters, const NetemProbe& netem) {
  if (netem.available) {
    return std::make_unique<PacketLoss>(LossBackend::kNetem, adapters.qdiscs, adapters.nftables,
                                        "");
  }
  const std::string& netem_problem = netem.problem;
  if (adapters.nftables != nullptr) {
    core::Status nft = adapters.nftables->probe(nftLossProbeScript());
    if (nft.isOk()) {
      return std::make_unique<PacketLoss>(LossBackend::kNftables, adapters.qdiscs,
                                          adapters.nftables,
                                          netem_problem + "; using nftables numgen random drop");
    }
    return std::make_unique<PacketLoss>(
        LossBackend::kNone, adapters.qdiscs, adapters.nftables,
        netem_problem + "; nftables cannot drop packets either (" + nft.message() + ")");
  }
  return std::make_unique<PacketLoss>(LossBackend::kNone, adapters.qdiscs, adapters.nftables,
                                      netem_problem + "; no nftables adapter");
}

}  // namespace

std::unique_ptr<Registry> makeRegistry(const SysAdapters& adapters) {
  auto registry = std::make_unique<Registry>();
  const NetemProbe netem = probeNetem(adapters);
  registry->add(std::make_unique<LinkFlap>(adapters.links));
  registry->add(makePacketLoss(adapters, netem));
  registry->add(std::make_unique<Netem>(adapters.qdiscs, netem.available, netem.problem));
  return registry;
}

}  // namespace fabric_chaos::injectors
