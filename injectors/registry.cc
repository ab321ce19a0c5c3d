#include "injectors/registry.h"

#include "injectors/link/link_flap.h"
#include "injectors/loss/packet_loss.h"
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

// Chooses the packet-loss backend: netem when the kernel has it (it also offers correlation
// and delay), else an nftables netdev table with a numgen random drop rule.
std::unique_ptr<Injector> makePacketLoss(const SysAdapters& adapters) {
  std::string netem_problem = "no qdisc adapter";
  if (adapters.qdiscs != nullptr) {
    core::Status netem = adapters.qdiscs->probeKind("netem");
    if (netem.isOk()) {
      return std::make_unique<PacketLoss>(LossBackend::kNetem, adapters.qdiscs, adapters.nftables,
                                          "");
    }
    netem_problem = netem.code() == core::StatusCode::kNotSupported
                        ? "sch_netem is not in this kernel"
                        : "netem probe failed (" + netem.message() + ")";
  }
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
  registry->add(std::make_unique<LinkFlap>(adapters.links));
  registry->add(makePacketLoss(adapters));
  return registry;
}

}  // namespace fabric_chaos::injectors
