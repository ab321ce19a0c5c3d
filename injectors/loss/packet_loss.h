#pragma once
// packet_loss: drops a percentage of an interface's packets until reverted. The backend is
// chosen once by makeRegistry(): netem (root qdisc, egress only, supports correlation) when the
// kernel has sch_netem, else an nftables netdev table `fc_loss_<ifname>` whose chains drop with
// `numgen random`. Both are idempotent: apply replaces, revert of an absent fault succeeds.
// Called from the engine's run thread; holds no state between calls.

#include <cstdint>
#include <string>
#include <vector>

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class Nftables;
class Qdiscs;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

enum class LossBackend { kNetem, kNftables, kNone };

const char* lossBackendName(LossBackend backend);  // "netem", "nftables", "none"

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

  // reason: why this backend (or why none), shown in capabilities.
  PacketLoss(LossBackend backend, sys::Qdiscs* qdiscs, sys::Nftables* nftables, std::string reason);

  KindInfo info() const override;
  // {"percent": (0,100] required, "direction": "both"|"ingress"|"egress" (default both),
  //  "correlation": 0..100 (netem only)}; no other keys.
  core::Status validate(const json& params) const override;
  // {"backend": name}: revert uses the backend that applied, even if a later start-up would
  // choose another one.
  core::Result<json> capture(const Fault& fault) override;
  // nftables: several run() calls (table, then chain and rules per hook). A failure part-way
  // returns the error; revert() removes whatever was created.
  core::Status apply(const Fault& fault) override;
  core::Status revert(const Fault& fault, const json& prior) override;
  // {"backend", "active", "seen", "dropped"} (+ "qdisc" for netem).
  core::Result<json> observe(const Fault& fault) override;

  LossBackend backend() const { return backend_; }

 private:
  core::Status checkTarget(const Fault& fault) const;
  core::Status applyNetem(const Fault& fault);
  core::Status applyNftables(const Fault& fault);
  core::Status revertNetem(const Fault& fault);
  core::Status revertNftables(const Fault& fault);

  LossBackend backend_;
  sys::Qdiscs* qdiscs_;
  sys::Nftables* nftables_;
  std::string reason_;
};

}  // namespace fabric_chaos::injectors
