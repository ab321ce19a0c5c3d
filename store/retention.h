#pragma once
// Retention of old runs' raw measurements (`serve --retain-samples AGE`, `--retain-runs N`;
// docs/durability.md, "Retention"): a finished run older than AGE, or not among the N newest
// finished runs, keeps its analysis, score, events and an envelope of its samples (per rank the
// fastest and slowest iteration of each time bucket, so its plot and its stalls stay), and its
// telemetry series thinned to evenly spaced points; the rest of its samples and telemetry go. A
// run is pruned once (its attributes say "retention").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/store.h"

namespace fabric_chaos::store {

struct RetentionPolicy {
  std::optional<int64_t> max_age_ms;  // prune runs that finished longer ago than this
  std::optional<int> keep_runs;       // prune every finished run but the newest N
  int sample_buckets = 1000;          // per rank: at most twice this many samples stay
  int telemetry_points = 1000;        // per series: about this many points stay

  bool enabled() const { return max_age_ms.has_value() || keep_runs.has_value(); }
};

// "30d", "12h", "90m", "3600s": a whole, positive number of days, hours, minutes or seconds, in
// milliseconds. kInvalidArgument otherwise, naming what is accepted.
core::Result<int64_t> parseRetentionAge(const std::string& text);

// serve's --retain-samples AGE and --retain-runs N (either may be absent) as a policy; the error
// names the flag.
core::Result<RetentionPolicy> retentionPolicyFromFlags(const std::optional<std::string>& max_age,
                                                       const std::optional<std::string>& keep_runs);

struct RetentionPassReport {
  std::vector<PruneReport> pruned;  // oldest run first
  int64_t pages_released = 0;
};

// Prunes what the policy says, one run after the other, then releases the freed pages. Stops at
// the first store error, with what it did up to there lost only from the report.
// "run 12: samples 6000 -> 400, telemetry 10000 -> 102": one line of serve's log.
std::string describePrune(const PruneReport& pruned);

core::Result<RetentionPassReport> runRetentionPass(Store& store, const RetentionPolicy& policy,
                                                   int64_t now_ms);

}  // namespace fabric_chaos::store
