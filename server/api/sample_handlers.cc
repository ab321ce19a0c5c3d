// GET /v1/runs/{id}/samples (docs/api.md, "Runs"): a run's samples a page at a time, or their
// envelope for a plot. Both are read by the store with the filters pushed into SQL, so a request
// costs what it returns, not the size of the run.

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "server/api/handlers.h"
#include "server/api/run_lookup.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

// A page: what a 10-minute 4-rank run stores in about 20 s of its 600.
constexpr int kMaxSamplePage = 100000;
constexpr int kMaxPoints = 100000;

// The integer query parameter `key` when given: 400 when it is not a non-negative integer, 422
// outside lo..hi.
core::Result<std::optional<int64_t>> integerParam(const Call& call, const std::string& key,
                                                  int64_t lo, int64_t hi) {
  auto it = call.query.find(key);
  if (it == call.query.end()) return std::optional<int64_t>();
  auto value = parseInteger(it->second, key);
  if (!value) return value.status();
  if (*value < lo || *value > hi) {
    return Status(StatusCode::kUnprocessable, key + ": must be from " + std::to_string(lo) +
                                                  " to " + std::to_string(hi) + ", got " +
                                                  it->second);
  }
  return std::optional<int64_t>(*value);
}

struct SamplesRequest {
  store::SampleQuery query;
  std::optional<int> max_points;  // per rank: the envelope instead of a page
};

core::Result<SamplesRequest> samplesRequest(const Call& call) {
  SamplesRequest out;
  auto rank = integerParam(call, "rank", 0, 1 << 20);
  if (!rank) return rank.status();
  if (*rank) out.query.rank = static_cast<int>(**rank);
  auto after_ms = runMsFrom(call, "after_ms");
  if (!after_ms) return after_ms.status();
  out.query.after_ms = *after_ms;
  auto after = integerParam(call, "after", 0, std::numeric_limits<int64_t>::max());
  if (!after) return after.status();
  auto limit = integerParam(call, "limit", 1, kMaxSamplePage);
  if (!limit) return limit.status();
  auto max_points = integerParam(call, "max_points", 2, kMaxPoints);
  if (!max_points) return max_points.status();
  if (*max_points && (*after || *limit)) {
    return Status(StatusCode::kUnprocessable,
                  "max_points: an envelope covers the whole run (or what rank and after_ms "
                  "select); it does not page, so it cannot go with after or limit");
  }
  out.query.after_seq = after->value_or(0);
  out.query.limit = static_cast<int>(limit->value_or(kMaxSamplePage));
  if (*max_points) out.max_points = static_cast<int>(**max_points);
  return out;
}

}  // namespace

Response getRunSamples(Context& ctx, const Call& call) {
  auto run = runFrom(ctx, call);
  if (!run) return errorResponse(run.status());
  auto request = samplesRequest(call);
  if (!request) return errorResponse(request.status());
  auto ranks = ctx.deps.store->sampleRankCount(run->id);
  if (!ranks) return errorResponse(ranks.status());
  const int world = runWorldSize(*run, *ranks);

  json next_after = nullptr;
  core::Result<std::vector<store::SampleRow>> rows =
      request->max_points
          // Each bucket gives its fastest and its slowest sample: half as many buckets as points.
          ? ctx.deps.store->sampleEnvelope(run->id, request->query,
                                           std::max(1, *request->max_points / 2))
          : ctx.deps.store->sampleRows(run->id, request->query);
  if (!rows) return errorResponse(rows.status());
  // A full page may have more behind it; a short one is the end, for now.
  if (!request->max_points && !rows->empty() &&
      rows->size() >= static_cast<size_t>(request->query.limit)) {
    next_after = rows->back().seq;
  }
  json out = json::array();
  for (const store::SampleRow& row : *rows) out.push_back(sampleJson(row, world));
  return jsonResponse(200, json{{"run_id", run->id}, {"samples", out}, {"next_after", next_after}});
}

}  // namespace fabric_chaos::api::internal
