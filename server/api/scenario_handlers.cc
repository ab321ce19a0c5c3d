// /v1/scenarios: the scenario library. Documents are stored as submitted (with "name" filled in
// from the path for PUT), after parseScenario and validation have accepted them.

#include <mutex>

#include "scenarios/validate.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

constexpr char kReadOnly[] = "built-in scenarios are read-only; copy it under a new name";

Status checkName(const std::string& name, const std::string& where) {
  if (name.empty()) return Status(StatusCode::kInvalidArgument, where + ": required");
  if (!scenarios::isValidScenarioName(name)) {
    return Status(StatusCode::kInvalidArgument,
                  where + ": \"" + name +
                      "\" is not a valid scenario name (lower-case letters, digits, '.', '_', "
                      "'-'; at most 64 characters; starting with a letter or digit)");
  }
  return Status::ok();
}

Response scenarioCreated(const std::string& name, const json& document) {
  Response response = jsonResponse(201, document);
  response.headers.emplace_back("Location", "/v1/scenarios/" + name);
  return response;
}

}  // namespace

core::Result<scenarios::KindCatalog> kindCatalogFor(Context& ctx, const scenarios::Fabric& fabric) {
  if (!ctx.deps.kinds) return scenarios::KindCatalog{};
  return ctx.deps.kinds(fabric);
}

core::Result<scenarios::Scenario> parseAndValidate(Context& ctx, const json& document,
                                                   const std::string& fabric_name) {
  auto scenario = scenarios::parseScenario(document);
  if (!scenario) return scenario.status();
  // A scenario written for another fabric is validated against that one when it is registered.
  const std::string fabric_for = scenario->fabric.empty() ? fabric_name : scenario->fabric;
  if (ctx.deps.fabrics != nullptr) {
    auto fabric = ctx.deps.fabrics->get(fabric_for);
    if (fabric) {
      auto catalog = kindCatalogFor(ctx, fabric.value());
      if (!catalog) return catalog.status();
      FC_RETURN_IF_ERROR(scenarios::validateForFabric(scenario.value(), fabric.value(), *catalog));
      return scenario;
    }
    if (fabric.status().code() != StatusCode::kNotFound) return fabric.status();
  }
  // No such fabric yet: a fabric without hosts, whose catalog is the controller's own.
  scenarios::Fabric unregistered;
  unregistered.name = fabric_for;
  auto catalog = kindCatalogFor(ctx, unregistered);
  if (!catalog) return catalog.status();
  FC_RETURN_IF_ERROR(scenarios::validateKindsAndTiming(scenario.value(), *catalog));
  return scenario;
}

Response listScenarios(Context& ctx, const Call&) {
  auto records = ctx.deps.store->listScenarios();
  if (!records) return errorResponse(records.status());
  json out = json::array();
  for (const store::ScenarioRecord& record : records.value()) {
    const json& doc = record.document;
    std::string description;
    size_t steps = 0;
    if (doc.is_object()) {
      if (auto it = doc.find("description"); it != doc.end() && it->is_string()) {
        description = it->get<std::string>();
      }
      if (auto it = doc.find("steps"); it != doc.end() && it->is_array()) steps = it->size();
    }
    out.push_back({{"name", record.name},
                   {"description", description},
                   {"builtin", record.builtin},
                   {"updated_ms", record.updated_ms},
                   {"steps", steps}});
  }
  return jsonResponse(200, json{{"scenarios", out}});
}

Response getScenario(Context& ctx, const Call& call) {
  auto record = ctx.deps.store->getScenario(call.params.at(0));
  if (!record) return errorResponse(record.status());
  return jsonResponse(200, record->document);
}

Response createScenario(Context& ctx, const Call& call) {
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  auto scenario = parseAndValidate(ctx, body.value(), ctx.deps.default_fabric);
  if (!scenario) return errorResponse(scenario.status());
  const std::string name = scenario->name;
  if (Status st = checkName(name, "name"); !st.isOk()) return errorResponse(st);

  std::lock_guard<std::mutex> lock(ctx.scenario_mu);
  auto existing = ctx.deps.store->getScenario(name);
  if (existing) {
    return errorResponse(
        Status(StatusCode::kAlreadyExists,
               "scenario " + name + " already exists; PUT /v1/scenarios/" + name + " replaces it"));
  }
  if (existing.status().code() != StatusCode::kNotFound) return errorResponse(existing.status());
  if (Status st = ctx.deps.store->putScenario(name, body.value(), false); !st.isOk()) {
    return errorResponse(st);
  }
  return scenarioCreated(name, body.value());
}

Response replaceScenario(Context& ctx, const Call& call) {
  const std::string& name = call.params.at(0);
  if (Status st = checkName(name, "scenario name in the path"); !st.isOk()) {
    return errorResponse(st);
  }
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  json document = std::move(body.value());
  if (auto it = document.find("name"); it != document.end()) {
    if (!it->is_string() || it->get<std::string>() != name) {
      return errorResponse(Status(StatusCode::kInvalidArgument,
                                  "name: " + dumpJson(*it) + " does not match the path name \"" +
                                      name + "\"; omit it or make them equal"));
    }
  } else {
    document["name"] = name;
  }

  std::lock_guard<std::mutex> lock(ctx.scenario_mu);
  auto existing = ctx.deps.store->getScenario(name);
  if (existing && existing->builtin) {
    return errorResponse(
        Status(StatusCode::kFailedPrecondition, "scenario " + name + " is built-in: " + kReadOnly));
  }
  if (!existing && existing.status().code() != StatusCode::kNotFound) {
    return errorResponse(existing.status());
  }
  auto scenario = parseAndValidate(ctx, document, ctx.deps.default_fabric);
  if (!scenario) return errorResponse(scenario.status());
  if (Status st = ctx.deps.store->putScenario(name, document, false); !st.isOk()) {
    return errorResponse(st);
  }
  if (!existing) return scenarioCreated(name, document);
  return jsonResponse(200, document);
}

Response validateScenario(Context& ctx, const Call& call) {
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  const json& request = body.value();
  for (const auto& [key, value] : request.items()) {
    if (key != "scenario" && key != "fabric") {
      return errorResponse(Status(StatusCode::kInvalidArgument,
                                  "unknown field \"" + key + "\"; expected scenario, fabric"));
    }
  }
  auto it = request.find("scenario");
  if (it == request.end()) {
    return errorResponse(
        Status(StatusCode::kInvalidArgument, "scenario: required (the scenario document)"));
  }
  if (!it->is_object()) {
    return errorResponse(Status(
        StatusCode::kInvalidArgument,
        std::string("scenario: must be a scenario document (an object), got ") + it->type_name()));
  }
  // The editor saves what validates here, so the name is held to the same rule as POST/PUT.
  if (auto name = it->find("name"); name != it->end() && name->is_string()) {
    if (Status st = checkName(name->get<std::string>(), "name"); !st.isOk()) {
      return errorResponse(st);
    }
  }

  auto fabric_field = request.find("fabric");
  if (fabric_field == request.end()) {
    auto scenario = parseAndValidate(ctx, *it, ctx.deps.default_fabric);
    if (!scenario) return errorResponse(scenario.status());
    return jsonResponse(200, json{{"valid", true}});
  }
  // An explicit fabric must exist: the caller asked for its targets to be checked.
  if (!fabric_field->is_string() || fabric_field->get<std::string>().empty()) {
    return errorResponse(
        Status(StatusCode::kInvalidArgument, "fabric: must be a non-empty string"));
  }
  const std::string fabric_name = fabric_field->get<std::string>();
  if (ctx.deps.fabrics == nullptr) {
    return errorResponse(
        Status(StatusCode::kUnprocessable, "fabric " + fabric_name + " is not registered"));
  }
  auto fabric = ctx.deps.fabrics->get(fabric_name);
  if (!fabric) {
    if (fabric.status().code() == StatusCode::kNotFound) {
      return errorResponse(
          Status(StatusCode::kUnprocessable,
                 "fabric " + fabric_name + " is not registered; run `fabric-chaos lab up` first"));
    }
    return errorResponse(fabric.status());
  }
  auto scenario = scenarios::parseScenario(*it);
  if (!scenario) return errorResponse(scenario.status());
  auto catalog = kindCatalogFor(ctx, fabric.value());
  if (!catalog) return errorResponse(catalog.status());
  if (Status st = scenarios::validateForFabric(scenario.value(), fabric.value(), *catalog);
      !st.isOk()) {
    return errorResponse(st);
  }
  return jsonResponse(200, json{{"valid", true}});
}

Response deleteScenario(Context& ctx, const Call& call) {
  const std::string& name = call.params.at(0);
  std::lock_guard<std::mutex> lock(ctx.scenario_mu);
  auto existing = ctx.deps.store->getScenario(name);
  if (!existing) return errorResponse(existing.status());
  if (existing->builtin) {
    return errorResponse(
        Status(StatusCode::kFailedPrecondition, "scenario " + name + " is built-in: " + kReadOnly));
  }
  if (Status st = ctx.deps.store->deleteScenario(name); !st.isOk()) return errorResponse(st);
  Response response;
  response.status = 204;
  response.content_type.clear();
  return response;
}

}  // namespace fabric_chaos::api::internal
