// /v1/runs: submitting, listing, inspecting and aborting runs. Submission only validates and hands
// the run to the RunService; nothing is stored here when a request is rejected.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "scenarios/analysis.h"
#include "scenarios/validate.h"
#include "server/api/handlers.h"
#include "server/api/run_lookup.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

constexpr int kDefaultRunLimit = 100;
constexpr int kMaxRunLimit = 1000;

Status fabricNotRegistered(const std::string& fabric) {
  return Status(StatusCode::kUnprocessable,
                "fabric " + fabric + " is not registered; run `fabric-chaos lab up` first");
}

}  // namespace

json runSummary(const store::RunRecord& run) {
  // passed: the engine's verdict when it stored one, else what the final state says; null while
  // the run is in progress or when it ended without a verdict (aborted, error...).
  json passed = nullptr;
  if (auto it = run.result.find("passed"); it != run.result.end() && it->is_boolean()) {
    passed = *it;
  } else if (run.state == "passed") {
    passed = true;
  } else if (run.state == "failed") {
    passed = false;
  }
  json duration = nullptr;
  if (run.started_ms > 0 && run.finished_ms >= run.started_ms) {
    duration = run.finished_ms - run.started_ms;
  }
  json suite_run_id = nullptr;
  if (auto it = run.attributes.find("suite_run_id");
      it != run.attributes.end() && it->is_number_integer()) {
    suite_run_id = *it;
  }
  return json{{"id", run.id},
              {"scenario", run.scenario_name},
              {"fabric", run.fabric},
              {"state", run.state},
              {"score", run.score ? json(*run.score) : json(nullptr)},
              {"passed", passed},
              {"created_ms", run.created_ms},
              {"started_ms", run.started_ms},
              {"finished_ms", run.finished_ms},
              {"duration_ms", duration},
              {"error", run.error},
              {"suite_run_id", suite_run_id}};
}

json eventJson(const store::EventRecord& event) {
  return json{{"t_ms", event.t_ms},
              {"wall_ms", event.wall_ms},
              {"kind", event.kind},
              {"detail", event.detail}};
}

int runWorldSize(const store::RunRecord& run, int reported_ranks) {
  size_t world = static_cast<size_t>(std::max(0, reported_ranks));
  if (const json& doc = run.scenario; doc.is_object()) {
    auto workload = doc.find("workload");
    if (workload != doc.end() && workload->is_object()) {
      auto hosts = workload->find("hosts");
      if (hosts != workload->end() && hosts->is_array()) world = std::max(world, hosts->size());
    }
  }
  return static_cast<int>(world);
}

json sampleJson(const store::SampleRow& row, int world_size) {
  const core::Sample& s = row.sample;
  return json{{"seq", row.seq},
              {"rank", s.rank},
              {"iteration", s.iteration},
              {"start_ms", s.start_ms},
              {"duration_ms", s.duration_ms},
              {"bytes", s.bytes},
              {"busbw_gbps", scenarios::iterationRate(s.bytes, s.duration_ms, world_size)}};
}

Response createRun(Context& ctx, const Call& call) {
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  const json& request = body.value();
  for (const auto& [key, value] : request.items()) {
    if (key != "scenario" && key != "fabric" && key != "gates") {
      return errorResponse(
          Status(StatusCode::kInvalidArgument,
                 "unknown field \"" + key + "\"; expected scenario, fabric, gates"));
    }
  }

  // The scenario: a stored one by name, or an inline document.
  json document;
  std::string context;  // prefixes parse / validation errors
  auto it = request.find("scenario");
  if (it == request.end()) {
    return errorResponse(Status(StatusCode::kInvalidArgument,
                                "scenario: required (a scenario name or an inline document)"));
  }
  if (it->is_string()) {
    const std::string name = it->get<std::string>();
    auto record = ctx.deps.store->getScenario(name);
    if (!record) {
      if (record.status().code() == StatusCode::kNotFound) {
        return errorResponse(Status(StatusCode::kNotFound, "scenario " + name + " not found"));
      }
      return errorResponse(record.status());
    }
    document = record->document;
    context = "scenario " + name;
  } else if (it->is_object()) {
    document = *it;
    if (!document.contains("name")) document["name"] = "inline";
    context = "scenario";
  } else {
    return errorResponse(Status(StatusCode::kInvalidArgument,
                                std::string("scenario: must be a scenario name or an inline "
                                            "scenario document, got ") +
                                    it->type_name()));
  }

  // The request's fabric, else the one the scenario is written for, else the server's default.
  std::string fabric_name = ctx.deps.default_fabric;
  if (auto f = document.find("fabric");
      f != document.end() && f->is_string() && !f->get<std::string>().empty()) {
    fabric_name = f->get<std::string>();
  }
  if (auto f = request.find("fabric"); f != request.end()) {
    if (!f->is_string() || f->get<std::string>().empty()) {
      return errorResponse(
          Status(StatusCode::kInvalidArgument, "fabric: must be a non-empty string"));
    }
    fabric_name = f->get<std::string>();
  }

  // Per-run gates override the scenario's, key by key.
  if (auto g = request.find("gates"); g != request.end()) {
    if (!g->is_object()) {
      return errorResponse(Status(StatusCode::kInvalidArgument,
                                  std::string("gates: must be an object, got ") + g->type_name()));
    }
    if (!document.contains("gates") || !document["gates"].is_object()) {
      document["gates"] = json::object();
    }
    document["gates"].update(*g);
  }

  if (ctx.deps.fabrics == nullptr) return errorResponse(fabricNotRegistered(fabric_name));
  auto fabric = ctx.deps.fabrics->get(fabric_name);
  if (!fabric) {
    if (fabric.status().code() == StatusCode::kNotFound) {
      return errorResponse(fabricNotRegistered(fabric_name));
    }
    return errorResponse(fabric.status());
  }

  auto scenario = scenarios::parseScenario(document);
  if (!scenario) return errorResponse(scenario.status().withContext(context));
  auto catalog = kindCatalogFor(ctx, fabric.value());
  if (!catalog) return errorResponse(catalog.status());
  if (Status st = scenarios::validateForFabric(scenario.value(), fabric.value(), *catalog);
      !st.isOk()) {
    return errorResponse(st.withContext(context));
  }

  if (ctx.deps.runs == nullptr) {
    return errorResponse(Status(StatusCode::kUnavailable, "this server does not execute runs"));
  }
  auto id = ctx.deps.runs->submit(scenario.value(), fabric_name);
  if (!id) return errorResponse(id.status());
  const std::string self = "/v1/runs/" + std::to_string(id.value());
  Response response =
      jsonResponse(202, json{{"id", id.value()}, {"state", "queued"}, {"links", {{"self", self}}}});
  response.headers.emplace_back("Location", self);
  return response;
}

Response listRuns(Context& ctx, const Call& call) {
  store::RunFilter filter;
  filter.limit = kDefaultRunLimit;
  if (auto it = call.query.find("scenario"); it != call.query.end()) filter.scenario = it->second;
  if (auto it = call.query.find("state"); it != call.query.end()) filter.state = it->second;
  if (auto it = call.query.find("limit"); it != call.query.end()) {
    auto limit = parseInteger(it->second, "limit");
    if (!limit || limit.value() < 1 || limit.value() > kMaxRunLimit) {
      return errorResponse(
          Status(StatusCode::kInvalidArgument, "limit: must be an integer from 1 to " +
                                                   std::to_string(kMaxRunLimit) + ", got \"" +
                                                   it->second + "\""));
    }
    filter.limit = static_cast<int>(limit.value());
  }
  if (auto it = call.query.find("fabric"); it != call.query.end()) filter.fabric = it->second;
  auto runs = ctx.deps.store->listRuns(filter);
  if (!runs) return errorResponse(runs.status());
  json out = json::array();
  for (const store::RunRecord& run : runs.value()) out.push_back(runSummary(run));
  return jsonResponse(200, json{{"runs", out}});
}

Response getRun(Context& ctx, const Call& call) {
  auto run = runFrom(ctx, call);
  if (!run) return errorResponse(run.status());
  auto transitions = ctx.deps.store->runTransitions(run->id);
  if (!transitions) return errorResponse(transitions.status());
  auto events = ctx.deps.store->events(run->id);
  if (!events) return errorResponse(events.status());

  json out = runSummary(run.value());
  out["scenario_document"] = run->scenario;
  out["attributes"] = run->attributes;
  out["result"] = run->result;
  out["transitions"] = transitions.value();
  json timeline = json::array();
  for (const store::EventRecord& event : events.value()) timeline.push_back(eventJson(event));
  out["timeline"] = std::move(timeline);
  out["live"] = ctx.deps.live ? ctx.deps.live(run->id) : json(nullptr);
  return jsonResponse(200, out);
}

Response abortRun(Context& ctx, const Call& call) {
  auto id = runIdFrom(call);
  if (!id) return errorResponse(id.status());
  if (ctx.deps.runs == nullptr) {
    return errorResponse(Status(StatusCode::kUnavailable, "this server does not execute runs"));
  }
  if (Status st = ctx.deps.runs->abort(id.value()); !st.isOk()) return errorResponse(st);
  return jsonResponse(202, json{{"id", id.value()}, {"state", "aborting"}});
}

Response getRunEvents(Context& ctx, const Call& call) {
  auto run = runFrom(ctx, call);
  if (!run) return errorResponse(run.status());
  auto events = ctx.deps.store->events(run->id);
  if (!events) return errorResponse(events.status());
  json out = json::array();
  for (const store::EventRecord& event : events.value()) out.push_back(eventJson(event));
  return jsonResponse(200, json{{"run_id", run->id}, {"events", out}});
}

}  // namespace fabric_chaos::api::internal
