// GET /v1/runs/{id}/stream: a run's Server-Sent Events (docs/api.md, "Runs"). The stream polls
// the store (and the engine's live view) each time the transport calls next(); it remembers what
// it has sent so that every message carries only what is new. Store failures end the stream with
// an `error` event rather than leaving the client waiting on a stream that cannot progress.

#include <functional>
#include <map>
#include <memory>
#include <set>
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

    auto samples = store_->samples(run_id_);
    if (!samples) return fail(samples.status());
    const int world = runWorldSize(run.value(), samples.value());
    json new_samples = json::array();
    for (const core::Sample& s : samples.value()) {
      auto sent = last_iteration_.find(s.rank);
      if (sent != last_iteration_.end() && s.iteration <= sent->second) continue;
      new_samples.push_back(sampleJson(s, world));
    }
    for (const core::Sample& s : samples.value()) {
      auto [it, inserted] = last_iteration_.emplace(s.rank, s.iteration);
      if (!inserted && s.iteration > it->second) it->second = s.iteration;
    }

    auto events = store_->events(run_id_);
    if (!events) return fail(events.status());
    json new_events = json::array();
    // Events have no id; a late event may sort before ones already sent, so remember each one
    // by its content instead of by position.
    for (const store::EventRecord& event : events.value()) {
      json e = eventJson(event);
      if (sent_events_.insert(dumpJson(e)).second) new_events.push_back(std::move(e));
    }

    // The final message pair always goes out, so that a client opening the stream of a finished
    // run gets everything in one samples + timeline message before `end`.
    if (!new_samples.empty() || final_state) {
      chunk.text += sseMessage("samples", json{{"samples", std::move(new_samples)}});
    }
    if (!new_events.empty() || final_state) {
      chunk.text += sseMessage("timeline", json{{"events", std::move(new_events)}});
    }
    if (final_state) {
      chunk.text += sseMessage("end", runSummary(run.value()));
      chunk.done = done_ = true;
      return chunk;
    }
    // Nothing new is an empty chunk: keep-alive comments are the transport's business.
    return chunk;
  }

 private:
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
  json last_status_;                       // null until the first status is sent
  std::map<int, int64_t> last_iteration_;  // rank -> highest iteration sent
  std::set<std::string> sent_events_;      // serialized events already sent
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
