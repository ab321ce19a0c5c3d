// /v1/schedules (docs/api.md, "Schedules"): cron schedules that start a scenario or a suite. The
// cron expression is parsed here so that a bad one is a 400 naming its field; firing is the
// scheduler's job (scenarios/schedule/scheduler.h).

#include "scenarios/schedule/cron.h"
#include "scenarios/schedule/scheduler.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

json scheduleView(const store::ScheduleRecord& s) {
  const auto next = scenarios::schedule::scheduleNextFireMs(s);
  auto orNull = [](const std::string& text) { return text.empty() ? json(nullptr) : json(text); };
  return {{"id", s.id},
          {"cron", s.cron},
          {"scenario", orNull(s.scenario)},
          {"suite", orNull(s.suite)},
          {"fabric", orNull(s.fabric)},
          {"enabled", s.enabled},
          {"created_ms", s.created_ms},
          {"next_fire_ms", next ? json(*next) : json(nullptr)},
          {"last_fired_ms", s.last_fired_ms == 0 ? json(nullptr) : json(s.last_fired_ms)},
          {"last_result", s.last_result}};
}

core::Result<store::ScheduleRecord> scheduleFrom(Context& ctx, const Call& call) {
  auto id = parseInteger(call.params.at(0), "schedule id");
  if (!id) return id.status();
  return ctx.deps.store->getSchedule(id.value());
}

// A non-empty string field, or "" when absent.
core::Result<std::string> optionalName(const json& request, const char* field) {
  auto it = request.find(field);
  if (it == request.end()) return std::string();
  if (!it->is_string() || it->get<std::string>().empty()) {
    return invalid(std::string(field) + ": must be a non-empty string");
  }
  return it->get<std::string>();
}

}  // namespace

Response listSchedules(Context& ctx, const Call&) {
  auto records = ctx.deps.store->listSchedules();
  if (!records) return errorResponse(records.status());
  json out = json::array();
  for (const store::ScheduleRecord& s : records.value()) out.push_back(scheduleView(s));
  return jsonResponse(200, json{{"schedules", out}});
}

Response createSchedule(Context& ctx, const Call& call) {
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  const json& request = body.value();
  for (const auto& [key, value] : request.items()) {
    if (key != "cron" && key != "scenario" && key != "suite" && key != "fabric" &&
        key != "enabled") {
      return errorResponse(invalid("unknown field \"" + key +
                                   "\"; expected cron, scenario, suite, fabric, enabled"));
    }
  }
  store::ScheduleRecord schedule;
  auto cron = request.find("cron");
  if (cron == request.end()) {
    return errorResponse(invalid("cron: required (a five-field cron expression, UTC)"));
  }
  if (!cron->is_string()) {
    return errorResponse(invalid(std::string("cron: must be a string, got ") + cron->type_name()));
  }
  schedule.cron = cron->get<std::string>();
  if (auto spec = scenarios::schedule::parseCron(schedule.cron); !spec) {
    return errorResponse(spec.status());
  }
  auto scenario = optionalName(request, "scenario");
  if (!scenario) return errorResponse(scenario.status());
  auto suite = optionalName(request, "suite");
  if (!suite) return errorResponse(suite.status());
  auto fabric = optionalName(request, "fabric");
  if (!fabric) return errorResponse(fabric.status());
  if (scenario->empty() == suite->empty()) {
    return errorResponse(invalid("exactly one of scenario and suite is required"));
  }
  schedule.scenario = scenario.value();
  schedule.suite = suite.value();
  schedule.fabric = fabric.value();
  if (auto it = request.find("enabled"); it != request.end()) {
    if (!it->is_boolean()) {
      return errorResponse(
          invalid(std::string("enabled: must be true or false, got ") + it->type_name()));
    }
    schedule.enabled = it->get<bool>();
  }
  // What it starts must exist now; if it is deleted later, the schedule records the error when
  // it fires.
  if (!schedule.scenario.empty()) {
    auto record = ctx.deps.store->getScenario(schedule.scenario);
    if (!record) {
      if (record.status().code() != StatusCode::kNotFound) return errorResponse(record.status());
      return errorResponse(Status(StatusCode::kUnprocessable,
                                  "scenario: scenario " + schedule.scenario + " does not exist"));
    }
  } else {
    auto record = ctx.deps.store->getSuite(schedule.suite);
    if (!record) {
      if (record.status().code() != StatusCode::kNotFound) return errorResponse(record.status());
      return errorResponse(
          Status(StatusCode::kUnprocessable, "suite: suite " + schedule.suite + " does not exist"));
    }
  }
  auto id = ctx.deps.store->createSchedule(schedule);
  if (!id) return errorResponse(id.status());
  auto stored = ctx.deps.store->getSchedule(id.value());
  if (!stored) return errorResponse(stored.status());
  Response response = jsonResponse(201, scheduleView(stored.value()));
  response.headers.emplace_back("Location", "/v1/schedules/" + std::to_string(id.value()));
  return response;
}

Response getSchedule(Context& ctx, const Call& call) {
  auto schedule = scheduleFrom(ctx, call);
  if (!schedule) return errorResponse(schedule.status());
  return jsonResponse(200, scheduleView(schedule.value()));
}

Response deleteSchedule(Context& ctx, const Call& call) {
  auto id = parseInteger(call.params.at(0), "schedule id");
  if (!id) return errorResponse(id.status());
  if (Status st = ctx.deps.store->deleteSchedule(id.value()); !st.isOk()) {
    return errorResponse(st);
  }
  Response response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

}  // namespace fabric_chaos::api::internal
