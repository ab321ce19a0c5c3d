// /v1/faults: what is applied on the fabric right now, across runs and agents, and the operator's
// "revert now". The list is the fault journal's unreverted entries (every fault is journaled
// before it is applied), newest first, so it also shows what a crashed or failed run left behind.

#include "core/clock.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

// intent: journaled, apply not confirmed (in progress, or the process died before it knew);
// applied: in force; failed: a revert was attempted and failed.
json faultJson(Context& ctx, const store::JournalEntry& entry, int64_t now_ms) {
  json fault = entry.fault;
  json agent = "local";
  if (auto it = fault.find("agent"); it != fault.end()) {
    agent = it->value("name", "local");
  }
  json owner = nullptr;
  json owner_state = nullptr;
  if (entry.run_id != 0) {
    owner = entry.run_id;
    if (auto run = ctx.deps.store->getRun(entry.run_id); run.isOk()) owner_state = run->state;
  }
  const bool running = entry.run_id != 0 && ctx.deps.faults != nullptr &&
                       ctx.deps.faults->ownedByRunningRun(entry.run_id);
  return {{"id", entry.id},
          {"kind", fault.value("kind", "")},
          {"target", fault.value("target", json::object())},
          {"params", fault.value("params", json::object())},
          {"agent", agent},
          {"state", entry.state},
          {"run_id", owner},
          {"run_state", owner_state},
          // Only faults no running run will take back are the operator's to revert.
          {"owned_by_running_run", running},
          {"applied_wall_ms", entry.intent_ms},
          {"age_ms", now_ms - entry.intent_ms},
          {"prior", entry.prior}};
}

}  // namespace

Response listFaults(Context& ctx, const Call&) {
  auto entries = ctx.deps.store->unrevertedJournal();
  if (!entries.isOk()) return errorResponse(entries.status());
  const int64_t now_ms = core::wallNowMs();
  json faults = json::array();
  for (const auto& entry : *entries) faults.push_back(faultJson(ctx, entry, now_ms));
  return jsonResponse(200, json{{"faults", faults}});
}

Response revertFault(Context& ctx, const Call& call) {
  auto id = parseInteger(call.params.at(0), "fault id");
  if (!id) return errorResponse(id.status());
  if (ctx.deps.faults == nullptr) {
    return errorResponse(Status(StatusCode::kUnavailable, "this server does not revert faults"));
  }
  if (Status st = ctx.deps.faults->revertNow(id.value()); !st.isOk()) return errorResponse(st);
  return jsonResponse(200, json{{"id", id.value()}, {"state", "reverted"}});
}

}  // namespace fabric_chaos::api::internal
