#include "injectors/model/netem_kind_spec.h"

namespace fabric_chaos::injectors {
namespace {

ParamSpec percent(const char* name, const char* doc) {
  return {name, ParamType::kNumber, "%", 0, false, 100, {}, false, nullptr, doc};
}

}  // namespace

const KindSpec& netemKindSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "netem";
    s.summary =
        "Impairs an interface's egress with one netem qdisc: delay, jitter, loss, duplication, "
        "corruption, reordering, rate; at least one impairment above 0.";
    s.resource = "root_qdisc";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"delay_ms",
         ParamType::kNumber,
         "ms",
         0,
         false,
         kNetemMaxDelayMs,
         {},
         false,
         nullptr,
         "added delay, microsecond resolution"},
        {"jitter_ms",
         ParamType::kNumber,
         "ms",
         0,
         false,
         kNetemMaxJitterMs,
         {},
         false,
         nullptr,
         "random variation of the delay; needs delay_ms"},
        percent("delay_correlation",
                "how much each delay depends on the previous one; needs jitter_ms"),
        {"distribution",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"uniform", "normal", "pareto", "paretonormal"},
         false,
         "uniform",
         "shape of the jitter; other than uniform needs jitter_ms"},
        percent("loss_percent", "independent random loss"),
        percent("loss_correlation", "correlation of the random loss; needs loss_percent"),
        {"loss_model",
         ParamType::kObject,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {},
         false,
         nullptr,
         "bursty loss, {\"gilbert_elliott\": {\"p\", \"r\", \"h\", \"k\"}} in percent; not with "
         "loss_percent"},
        percent("duplicate_percent", "packets sent twice"),
        percent("duplicate_correlation", "needs duplicate_percent"),
        percent("corrupt_percent", "packets with one random bit flipped"),
        percent("corrupt_correlation", "needs corrupt_percent"),
        percent("reorder_percent", "packets sent at once, ahead of delayed ones; needs delay_ms"),
        percent("reorder_correlation", "needs reorder_percent"),
        {"reorder_gap",
         ParamType::kInteger,
         "packets",
         1,
         false,
         kNetemMaxCount,
         {},
         false,
         1,
         "reorder candidates are every gap-th packet; needs reorder_percent"},
        {"rate_kbit",
         ParamType::kNumber,
         "kbit/s",
         0,
         true,
         kNetemMaxRateKbit,
         {},
         false,
         nullptr,
         "egress rate (1 kbit = 1000 bit), counted on L2 frames"},
        {"limit_packets",
         ParamType::kInteger,
         "packets",
         1,
         false,
         kNetemMaxCount,
         {},
         false,
         1000,
         "netem's queue length"},
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
