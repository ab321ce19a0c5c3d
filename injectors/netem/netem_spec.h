#pragma once
// Pure translation for the netem fault kind: params JSON -> sys::NetemSpec (with every check the
// user can fail, naming the parameter), and a dumped netem back to the same JSON vocabulary for
// observe(). The spec -> netlink attribute table step is sys::netemAttributes() (qdisc.h): the
// adapter needs it and injectors/sys cannot include this layer. No system calls; any thread.

#include <nlohmann/json.hpp>
#include <optional>

#include "core/status.h"
#include "injectors/sys/qdisc.h"

namespace fabric_chaos::injectors {

using nlohmann::json;

// The accepted keys (all optional, at least one impairment):
//   delay_ms 0..60000, jitter_ms 0..2147 (needs delay_ms), delay_correlation 0..100 (needs
//   jitter_ms), distribution "uniform"|"normal"|"pareto"|"paretonormal" (non-uniform needs
//   jitter_ms), loss_percent 0..100 + loss_correlation, or loss_model {"gilbert_elliott":
//   {"p", "r" (0,100] required; "h" 0..100 default 0; "k" 0..100 default 100}},
//   duplicate_percent + duplicate_correlation, corrupt_percent + corrupt_correlation,
//   reorder_percent + reorder_correlation + reorder_gap 1..2^31-1 (needs delay_ms),
//   rate_kbit (0, 1e10] (1 kbit = 1000 bit/s), limit_packets 1..2^31-1.
// kInvalidArgument, message "<param>: <problem>".
core::Result<sys::NetemSpec> netemSpecFromParams(const json& params);

// The impairments a netem qdisc applies, in the params' names and units (zeros omitted,
// limit_packets always present). The kernel does not dump the delay table, so "distribution"
// never appears.
json netemOptionsJson(const sys::NetemAttributes& attributes);

// The prior root qdisc as journalled by capture(): {"default": true, "kind": K} for the kernel's
// own (or no) root qdisc, else {"default": false, "kind": K, "handle": "8001:0", "attributes":
// [{"type": 2, "hex": "..."}]} with each rtnetlink attribute (2 = TCA_OPTIONS) as raw hex.
json priorJson(const std::optional<sys::SavedQdisc>& saved);
// The inverse; nullopt for a default prior. kInvalidArgument names the malformed field.
core::Result<std::optional<sys::SavedQdisc>> priorFromJson(const json& prior);

}  // namespace fabric_chaos::injectors
