// /v1/suites and /v1/suite-runs (docs/api.md, "Suites"): the suite library and the runs of
// suites. A suite document is checked field by field here (unknown fields 400, scenarios that do
// not exist 422 naming them); running one is the SuiteService's job.

#include <mutex>
#include <set>

#include "core/run_state.h"
#include "scenarios/model.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

constexpr int kDefaultSuiteRunLimit = 100;
constexpr int kMaxSuiteRunLimit = 1000;

Status checkSuiteName(const std::string& name, const std::string& where) {
  if (name.empty()) return Status(StatusCode::kInvalidArgument, where + ": required");
  if (!scenarios::isValidScenarioName(name)) {
    return Status(StatusCode::kInvalidArgument,
                  where + ": \"" + name +
                      "\" is not a valid suite name (lower-case letters, digits, '.', '_', "
                      "'-'; at most 64 characters; starting with a letter or digit)");
  }
  return Status::ok();
}

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// Every scenario the suite names must be stored now; kUnprocessable names the first that is not.
Status checkScenariosExist(Context& ctx, const json& scenarios) {
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const std::string name = scenarios[i].get<std::string>();
    auto record = ctx.deps.store->getScenario(name);
    if (record.isOk()) continue;
    if (record.status().code() == StatusCode::kNotFound) {
      return Status(StatusCode::kUnprocessable,
                    "scenarios[" + std::to_string(i) + "]: scenario " + name + " does not exist");
    }
    return record.status();
  }
  return Status::ok();
}

// The shape of a suite document: {"name", "description"?, "scenarios", "fabric"?,
// "stop_on_failure"?}; `name` must equal the path's.
Status checkSuiteDocument(Context& ctx, const json& doc, const std::string& name) {
  static const std::set<std::string> kFields = {"name", "description", "scenarios", "fabric",
                                                "stop_on_failure"};
  for (const auto& [key, value] : doc.items()) {
    if (kFields.count(key) == 0) {
      return invalid("unknown field \"" + key +
                     "\"; expected name, description, scenarios, fabric, stop_on_failure");
    }
  }
  if (auto it = doc.find("name"); it != doc.end()) {
    if (!it->is_string() || it->get<std::string>() != name) {
      return invalid("name: " + dumpJson(*it) + " does not match the path name \"" + name +
                     "\"; omit it or make them equal");
    }
  }
  if (auto it = doc.find("description"); it != doc.end() && !it->is_string()) {
    return invalid(std::string("description: must be a string, got ") + it->type_name());
  }
  auto scenarios = doc.find("scenarios");
  if (scenarios == doc.end()) return invalid("scenarios: required (a list of scenario names)");
  if (!scenarios->is_array() || scenarios->empty()) {
    return invalid("scenarios: must be a non-empty list of scenario names");
  }
  for (size_t i = 0; i < scenarios->size(); ++i) {
    const json& entry = (*scenarios)[i];
    const std::string where = "scenarios[" + std::to_string(i) + "]";
    if (!entry.is_string()) {
      return invalid(where + ": must be a scenario name, got " + entry.type_name());
    }
    FC_RETURN_IF_ERROR(checkSuiteName(entry.get<std::string>(), where));
  }
  if (auto it = doc.find("fabric"); it != doc.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      return invalid("fabric: must be a non-empty string");
    }
  }
  if (auto it = doc.find("stop_on_failure"); it != doc.end() && !it->is_boolean()) {
    return invalid(std::string("stop_on_failure: must be true or false, got ") + it->type_name());
  }
  return checkScenariosExist(ctx, *scenarios);
}

json suiteSummary(const store::SuiteRecord& record) {
  const json& doc = record.document;
  return {{"name", record.name},
          {"description", doc.value("description", std::string())},
          {"scenarios", doc.value("scenarios", json::array())},
          {"fabric", doc.contains("fabric") ? doc["fabric"] : json(nullptr)},
          {"stop_on_failure", doc.value("stop_on_failure", false)},
          {"builtin", record.builtin},
          {"updated_ms", record.updated_ms}};
}

// docs/api.md: one entry per scenario of the suite, in order. Runs were started in that order,
// but a scenario that could not be started has none, so runs are matched by scenario name.
json suiteRunView(Context& ctx, const store::SuiteRunRecord& record) {
  const bool final_state = core::isFinalRunState(record.state);
  json runs = json::array();
  size_t next_run = 0;
  const json scenarios = record.suite.value("scenarios", json::array());
  for (const json& entry : scenarios) {
    const std::string name = entry.is_string() ? entry.get<std::string>() : std::string();
    json item = {{"scenario", name},
                 {"run_id", nullptr},
                 {"state", final_state ? "skipped" : "pending"},
                 {"score", nullptr}};
    if (next_run < record.run_ids.size()) {
      const int64_t run_id = record.run_ids[next_run];
      auto run = ctx.deps.store->getRun(run_id);
      if (!run.isOk() || run->scenario_name == name) {
        ++next_run;
        item["run_id"] = run_id;
        if (run.isOk()) {
          item["state"] = run->state;
          if (run->score) item["score"] = *run->score;
        } else {
          item["state"] = "unknown";
        }
      }
    }
    runs.push_back(std::move(item));
  }
  json passed = nullptr;
  if (record.state == "passed") passed = true;
  if (final_state && record.state != "passed") passed = false;
  return {{"id", record.id},
          {"suite", record.suite_name},
          {"fabric", record.fabric.empty() ? json(nullptr) : json(record.fabric)},
          {"state", record.state},
          {"passed", passed},
          {"created_ms", record.created_ms},
          {"finished_ms", record.finished_ms == 0 ? json(nullptr) : json(record.finished_ms)},
          {"error", record.error},
          {"runs", runs}};
}

core::Result<int64_t> suiteRunIdFrom(const Call& call) {
  return parseInteger(call.params.at(0), "suite run id");
}

}  // namespace

Response listSuites(Context& ctx, const Call&) {
  auto records = ctx.deps.store->listSuites();
  if (!records) return errorResponse(records.status());
  json out = json::array();
  for (const store::SuiteRecord& record : records.value()) out.push_back(suiteSummary(record));
  return jsonResponse(200, json{{"suites", out}});
}

Response getSuite(Context& ctx, const Call& call) {
  auto record = ctx.deps.store->getSuite(call.params.at(0));
  if (!record) return errorResponse(record.status());
  return jsonResponse(200, record->document);
}

Response replaceSuite(Context& ctx, const Call& call) {
  const std::string& name = call.params.at(0);
  if (Status st = checkSuiteName(name, "suite name in the path"); !st.isOk()) {
    return errorResponse(st);
  }
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  json document = std::move(body.value());

  // The scenario lock also covers suites: a scenario cannot vanish between the check that it
  // exists and the store write (scenario deletion takes the same lock).
  std::lock_guard<std::mutex> lock(ctx.scenario_mu);
  auto existing = ctx.deps.store->getSuite(name);
  if (existing && existing->builtin) {
    return errorResponse(Status(StatusCode::kFailedPrecondition,
                                "suite " + name +
                                    " is built-in: built-in suites are read-only; copy it "
                                    "under a new name"));
  }
  if (!existing && existing.status().code() != StatusCode::kNotFound) {
    return errorResponse(existing.status());
  }
  if (Status st = checkSuiteDocument(ctx, document, name); !st.isOk()) return errorResponse(st);
  document["name"] = name;
  if (Status st = ctx.deps.store->putSuite(name, document, false); !st.isOk()) {
    return errorResponse(st);
  }
  if (existing) return jsonResponse(200, document);
  Response response = jsonResponse(201, document);
  response.headers.emplace_back("Location", "/v1/suites/" + name);
  return response;
}

Response deleteSuite(Context& ctx, const Call& call) {
  const std::string& name = call.params.at(0);
  std::lock_guard<std::mutex> lock(ctx.scenario_mu);
  if (Status st = ctx.deps.store->deleteSuite(name); !st.isOk()) {
    if (st.code() == StatusCode::kFailedPrecondition) {
      return errorResponse(Status(StatusCode::kFailedPrecondition,
                                  "suite " + name + " is built-in and cannot be deleted"));
    }
    return errorResponse(st);
  }
  Response response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

Response createSuiteRun(Context& ctx, const Call& call) {
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  const json& request = body.value();
  for (const auto& [key, value] : request.items()) {
    if (key != "suite" && key != "fabric") {
      return errorResponse(invalid("unknown field \"" + key + "\"; expected suite, fabric"));
    }
  }
  auto suite_field = request.find("suite");
  if (suite_field == request.end()) return errorResponse(invalid("suite: required (a suite name)"));
  if (!suite_field->is_string()) {
    return errorResponse(
        invalid(std::string("suite: must be a suite name, got ") + suite_field->type_name()));
  }
  const std::string name = suite_field->get<std::string>();
  std::string fabric;
  if (auto it = request.find("fabric"); it != request.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      return errorResponse(invalid("fabric: must be a non-empty string"));
    }
    fabric = it->get<std::string>();
    if (ctx.deps.fabrics == nullptr || !ctx.deps.fabrics->get(fabric).isOk()) {
      return errorResponse(
          Status(StatusCode::kUnprocessable,
                 "fabric " + fabric + " is not registered; run `fabric-chaos lab up` first"));
    }
  }
  if (ctx.deps.suites == nullptr) {
    return errorResponse(Status(StatusCode::kUnavailable, "this server does not run suites"));
  }
  auto suite = ctx.deps.store->getSuite(name);
  if (!suite) return errorResponse(suite.status());
  // A scenario may have been deleted since the suite was saved: say so now, not in the verdict.
  if (auto it = suite->document.find("scenarios"); it != suite->document.end() && it->is_array()) {
    if (Status st = checkScenariosExist(ctx, *it); !st.isOk()) {
      return errorResponse(st.withContext("suite " + name));
    }
  }
  auto id = ctx.deps.suites->submitSuite(name, suite->document, fabric);
  if (!id) return errorResponse(id.status());
  Response response = jsonResponse(
      202, json{{"id", id.value()},
                {"state", "queued"},
                {"links", {{"self", "/v1/suite-runs/" + std::to_string(id.value())}}}});
  response.headers.emplace_back("Location", "/v1/suite-runs/" + std::to_string(id.value()));
  return response;
}

Response listSuiteRuns(Context& ctx, const Call& call) {
  int limit = kDefaultSuiteRunLimit;
  if (auto it = call.query.find("limit"); it != call.query.end()) {
    auto parsed = parseInteger(it->second, "limit");
    if (!parsed || parsed.value() < 1 || parsed.value() > kMaxSuiteRunLimit) {
      return errorResponse(invalid("limit: must be an integer from 1 to " +
                                   std::to_string(kMaxSuiteRunLimit) + ", got \"" + it->second +
                                   "\""));
    }
    limit = static_cast<int>(parsed.value());
  }
  auto records = ctx.deps.store->listSuiteRuns(limit);
  if (!records) return errorResponse(records.status());
  json out = json::array();
  for (const store::SuiteRunRecord& record : records.value()) {
    out.push_back(suiteRunView(ctx, record));
  }
  return jsonResponse(200, json{{"suite_runs", out}});
}

Response getSuiteRun(Context& ctx, const Call& call) {
  auto id = suiteRunIdFrom(call);
  if (!id) return errorResponse(id.status());
  auto record = ctx.deps.store->getSuiteRun(id.value());
  if (!record) return errorResponse(record.status());
  return jsonResponse(200, suiteRunView(ctx, record.value()));
}

Response abortSuiteRun(Context& ctx, const Call& call) {
  auto id = suiteRunIdFrom(call);
  if (!id) return errorResponse(id.status());
  if (ctx.deps.suites == nullptr) {
    return errorResponse(Status(StatusCode::kUnavailable, "this server does not run suites"));
  }
  if (Status st = ctx.deps.suites->abortSuite(id.value()); !st.isOk()) return errorResponse(st);
  return jsonResponse(202, json{{"id", id.value()}, {"state", "aborting"}});
}

}  // namespace fabric_chaos::api::internal
