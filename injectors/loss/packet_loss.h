#pragma once
// packet_loss: drops a percentage of an interface's packets until reverted, with one of two
// backends. netem: a root netem qdisc on the interface's egress (supports correlation); the root
// qdisc the user had is journalled and given back exactly on revert, through the netem kind's own
// capture/apply/revert, and a root that could not be given back is refused up front. nftables: a
// netdev table `fc_loss_<ifname>` whose ingress/egress chains drop with `numgen random`.
// makeRegistry() probes both once and picks the default (netem when the kernel has it, unless
// `--loss-backend` forces one); a fault's `backend` param overrides it. Both are idempotent:
// apply replaces, revert of an absent fault succeeds. Called from the engine's run thread and
// from start-up recovery; holds no state between calls.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "injectors/injector.h"
#include "injectors/netem/netem.h"

namespace fabric_chaos::sys {
class Nftables;
class Qdiscs;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

enum class LossBackend { kNetem, kNftables, kNone };

const char* lossBackendName(LossBackend backend);  // "netem", "nftables", "none"
// "netem" or "nftables"; nullopt for anything else ("none" included: it cannot be chosen).
std::optional<LossBackend> parseLossBackend(const std::string& name);

// What makeRegistry() found, and which backend a fault without `backend` uses.
struct LossBackends {
  bool netem = false;
  std::string netem_problem;  // why not, when !netem: "sch_netem is not in this kernel"
  bool nftables = false;
  std::string nftables_problem;  // why not, when !nftables
  LossBackend preferred = LossBackend::kNone;
  // Shown in capabilities: why this default (or why none is usable).
  std::string reason;
};

// --- Pure translation (table-tested) ---

// "fc_loss_" + ifname with every character outside [a-zA-Z0-9_] replaced by '_'.
std::string nftLossTableName(const std::string& ifname);
// numgen threshold out of 1'000'000: round(percent * 10000), at least 1 for percent > 0.
int64_t nftLossThreshold(double percent);
// The nft scripts apply runs, in order: table, then per hook a chain and its two rules.
// hooks are "ingress" and/or "egress".
std::vector<std::string> nftLossScripts(const std::string& ifname, double percent,
                                        const std::vector<std::string>& hooks);
// The rule set makeRegistry() probes in a scratch namespace (netdev ingress+egress, numgen).
std::string nftLossProbeScript();

struct LossCounters {
  uint64_t seen = 0;     // packets that reached the chains (first rule's counter)
  uint64_t dropped = 0;  // packets the numgen rule dropped
};
// Sums the counters of `nft -j list table` output over all chains.
LossCounters nftLossCounters(const json& listing);

class PacketLoss : public Injector {
 public:
  static constexpr const char* kKind = "packet_loss";

  PacketLoss(LossBackends backends, sys::Qdiscs* qdiscs, sys::Nftables* nftables);
  // Only `backend` exists (kNone: neither); reason as in LossBackends.
  PacketLoss(LossBackend backend, sys::Qdiscs* qdiscs, sys::Nftables* nftables, std::string reason);

  // backend: the default one; available: whether that default can be used.
  const KindSpec& spec() const override;
  KindInfo info() const override;
  // {"percent": (0,100] required,
  //  "direction": "both"|"ingress"|"egress" (default both; netem: egress only, anything else is
  //  kUnprocessable with what to use instead),
  //  "correlation": 0..100 (netem only),
  //  "backend": "netem"|"nftables" (default: info().backend; one this kernel lacks is
  //  kUnprocessable with the reason)}; no other keys. Touches nothing.
  core::Status validate(const json& params) const override;
  // netem: {"backend": "netem", "root": <the netem kind's prior of the root qdisc>}, or
  // kFailedPrecondition naming the root and why it could not be given back. nftables:
  // {"backend": "nftables"}. Revert uses the backend named here, even if a later start-up would
  // choose another one.
  core::Result<json> capture(const Fault& fault) override;
  // nftables: several run() calls (table, then chain and rules per hook). A failure part-way
  // returns the error; revert() removes whatever was created. A backend the kernel lacks is
  // kNotSupported with the reason.
  core::Status apply(const Fault& fault) override;
  // netem: removes our netem and re-creates the journalled root (see Netem::revert); a prior
  // without "root" (journalled by older versions) only removes a netem root.
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"backend", "active", "seen", "dropped"} (+ "qdisc" for netem), for the fault's backend.
  core::Result<json> observe(const Fault& fault) override;

  LossBackend backend() const { return backends_.preferred; }
  // The backend a fault with these params uses: params.backend, else the default.
  LossBackend backendFor(const json& params) const;

 private:
  // The interface the fault acts on; refused before any system call when it is not one.
  core::Result<InterfaceTarget> checkTarget(const Fault& fault) const;
  core::Status checkAvailable(LossBackend backend) const;
  Fault netemFault(const Fault& fault) const;
  core::Status applyNftables(const InterfaceTarget& target, const json& params);
  core::Status revertNftables(const InterfaceTarget& target);

  LossBackends backends_;
  sys::Qdiscs* qdiscs_;
  sys::Nftables* nftables_;
  Netem netem_;  // the netem kind, which owns root capture and restore
};

}  // namespace fabric_chaos::injectors
