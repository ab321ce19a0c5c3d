#include "injectors/model/packet_loss_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& packetLossSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "packet_loss";
    s.summary = "Drops a percentage of the packets crossing an interface, with netem or nftables.";
    // Its netem backend is the interface's root qdisc, so it and netem never share an
    // interface's root at one time (one netem fault can carry both delay and loss).
    s.resource = "root_qdisc";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"percent",
         ParamType::kNumber,
         "%",
         0,
         true,
         100,
         {},
         true,
         nullptr,
         "share of packets dropped"},
        {"direction",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"both", "ingress", "egress"},
         false,
         "both",
         "which packets: leaving (egress), arriving (ingress) or both; the netem backend does "
         "egress only"},
        {"correlation",
         ParamType::kNumber,
         "%",
         0,
         false,
         100,
         {},
         false,
         nullptr,
         "how much each drop decision depends on the previous one (netem backend only)"},
        {"backend",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"netem", "nftables"},
         false,
         nullptr,
         "forces a backend for this fault; by default the agent's (--loss-backend, else netem "
         "when the kernel has it, else nftables)"},
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
