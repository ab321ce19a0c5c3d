#include "store/retention.h"

#include <limits>

namespace fabric_chaos::store {

using core::Status;
using core::StatusCode;

core::Result<int64_t> parseRetentionAge(const std::string& text) {
  const Status bad(StatusCode::kInvalidArgument,
                   "retention age \"" + text +
                       "\": a whole positive number with a unit, d, h, m or s (30d, 12h, 90m)");
  if (text.size() < 2 || text.size() > 12) return bad;
  int64_t unit_ms = 0;
  switch (text.back()) {
    case 'd':
      unit_ms = 86'400'000;
      break;
    case 'h':
      unit_ms = 3'600'000;
      break;
    case 'm':
      unit_ms = 60'000;
      break;
    case 's':
      unit_ms = 1'000;
      break;
    default:
      return bad;
  }
  int64_t count = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return bad;
    count = count * 10 + (text[i] - '0');
  }
  if (count <= 0 || count > std::numeric_limits<int64_t>::max() / unit_ms) return bad;
  return count * unit_ms;
}

core::Result<RetentionPolicy> retentionPolicyFromFlags(
    const std::optional<std::string>& max_age, const std::optional<std::string>& keep_runs) {
  RetentionPolicy policy;
  if (max_age) {
    auto age = parseRetentionAge(*max_age);
    if (!age) return age.status().withContext("--retain-samples");
    policy.max_age_ms = *age;
  }
  if (keep_runs) {
    const std::string& text = *keep_runs;
    const bool digits = !text.empty() && text.size() <= 9 &&
                        text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
      return Status(StatusCode::kInvalidArgument,
                    "--retain-runs: a whole number of runs >= 0, got \"" + text + "\"");
    }
    policy.keep_runs = std::stoi(text);
  }
  return policy;
}

std::string describePrune(const PruneReport& pruned) {
  return "run " + std::to_string(pruned.run_id) + ": samples " +
         std::to_string(pruned.samples_before) + " -> " + std::to_string(pruned.samples_kept) +
         ", telemetry " + std::to_string(pruned.telemetry_before) + " -> " +
         std::to_string(pruned.telemetry_kept);
}

core::Result<RetentionPassReport> runRetentionPass(Store& store, const RetentionPolicy& policy,
                                                   int64_t now_ms) {
  RetentionPassReport report;
  if (!policy.enabled()) return report;
  const int64_t finished_before = policy.max_age_ms ? now_ms - *policy.max_age_ms : 0;
  auto runs = store.prunableRuns(finished_before > 0 ? finished_before : 0,
                                 policy.keep_runs ? *policy.keep_runs : -1);
  if (!runs) return runs.status();
  for (int64_t run_id : *runs) {
    auto pruned = store.pruneRun(run_id, policy.sample_buckets, policy.telemetry_points);
    if (!pruned) return pruned.status();
    report.pruned.push_back(*pruned);
  }
  if (!report.pruned.empty()) {
    auto released = store.releaseFreePages();
    if (!released) return released.status();
    report.pages_released = *released;
  }
  return report;
}

}  // namespace fabric_chaos::store
