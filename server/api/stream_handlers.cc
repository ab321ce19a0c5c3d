// GET /v1/runs/{id}/stream: a run's Server-Sent Events (docs/api.md, "Runs"). The stream polls
// the store (and the engine's live view) each time the transport calls next(). It keeps the store
// cursor of the last sample and event it sent and asks only for what came after, a page at a
// time, so a tick costs what is new, not the run's size. Store failures end the stream with an
// `error` event rather than leaving the client waiting on a stream that cannot progress.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/run_state.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using nlohmann::json;

namespace {

std::string sseMessage(const std::string& event, const json& data) {
  return "event: " + event + "\ndata: " + dumpJson(data) + "\n\n";
}

class RunStream : public core::EventStream {
 public:
  RunStream(store::Store* store, std::function<json(int64_t)> live, int64_t run_id)
      : store_(store), live_(std::move(live)), run_id_(run_id) {}

  Chunk next() override {
    if (done_) return Chunk{"", true};
    auto run = store_->getRun(run_id_);
    if (!run) return fail(run.status());
    const bool final_state = core::isFinalRunState(run->state);

    Chunk chunk;
    // The live view of a finished run is meaningless (and the engine has dropped it).
    json live = (!final_state && live_) ? live_(run_id_) : json(nullptr);
    json status{{"state", run->state}, {"live", live}};
    if (status != last_status_) {
      chunk.text += sseMessage("status", status);
      last_status_ = std::move(status);
    }

    // Only what was stored since the last tick, a page at most: the cursor is in the query.
    store::SampleQuery query;
    query.after_seq = sample_seq_;
    query.limit = kSamplePage;
    auto samples = store_->sampleRows(run_id_, query);
    if (!samples) return fail(samples.status());
    auto ranks = store_->sampleRankCount(run_id_);
    if (!ranks) return fail(ranks.status());
    const int world = runWorldSize(run.value(), *ranks);
    json new_samples = json::array();
    for (const store::SampleRow& row : *samples) new_samples.push_back(sampleJson(row, world));
    if (!samples->empty()) sample_seq_ = samples->back().seq;
    auto events = store_->eventRows(run_id_, event_seq_, kEventPage);
    if (!events) return fail(events.status());
    json new_events = json::array();
    for (const store::EventRow& row : *events) new_events.push_back(eventJson(row.event));
    if (!events->empty()) event_seq_ = events->back().seq;
    // A full page may have more behind it: come back at once rather than after the poll
    // interval, and do not end a finished run's stream before all of it went out.
    catching_up_ = samples->size() >= static_cast<size_t>(kSamplePage) ||
                   events->size() >= static_cast<size_t>(kEventPage);

    // A finished run's last pair always goes out, possibly empty, before `end`.
    const bool ending = final_state && !catching_up_;
    if (!new_samples.empty() || ending) {
      chunk.text += sseMessage("samples", json{{"samples", std::move(new_samples)}});
    }
    if (!new_events.empty() || ending) {
      chunk.text += sseMessage("timeline", json{{"events", std::move(new_events)}});
    }
    if (ending) {
      chunk.text += sseMessage("end", runSummary(run.value()));
      chunk.done = done_ = true;
      return chunk;
    }
    // Nothing new is an empty chunk: keep-alive comments are the transport's business.
    return chunk;
  }

  int pollIntervalMs() const override { return catching_up_ ? 0 : kPollMs; }

 private:
  // A page of samples per message: about 1.5 MB of JSON.
  static constexpr int kSamplePage = 10000;
  static constexpr int kEventPage = 1000;
  static constexpr int kPollMs = 500;

  Chunk fail(const Status& status) {
    done_ = true;
    json body{
        {"error", {{"code", core::statusCodeName(status.code())}, {"message", status.message()}}}};
    return Chunk{sseMessage("error", body), true};
  }

  store::Store* store_;
  std::function<json(int64_t)> live_;
  const int64_t run_id_;
  bool done_ = false;
  json last_status_;          // null until the first status is sent
  int64_t sample_seq_ = 0;    // the last sample sent, by its store cursor
  int64_t event_seq_ = 0;     // the last event sent
  bool catching_up_ = false;  // the last tick read a full page
};

}  // namespace

std::unique_ptr<core::EventStream> openRunStream(Context& ctx, const Call& call,
                                                 Response* refusal) {
  auto id = parseInteger(call.params.at(0), "run id");
  if (!id) {
    *refusal = errorResponse(id.status());
    return nullptr;
  }
  // Refuse an unknown run now, with a plain 404, instead of opening a stream that ends at once.
  auto run = ctx.deps.store->getRun(id.value());
  if (!run) {
    *refusal = errorResponse(run.status());
    return nullptr;
  }
  return std::make_unique<RunStream>(ctx.deps.store, ctx.deps.live, id.value());
}

}  // namespace fabric_chaos::api::internal
