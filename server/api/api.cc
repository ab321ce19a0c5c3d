#include "server/api/api.h"

#include <exception>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "core/clock.h"
#include "core/log.h"
#include "server/api/handlers.h"
#include "server/api/util.h"
#include "server/auth/policy.h"
#include "server/auth/tokens.h"

namespace fabric_chaos::api {

using core::Status;
using core::StatusCode;

Response errorResponse(const Status& status) {
  // An OK status has no error to report; treat it as a bug rather than answer 200 with an error.
  if (status.isOk()) {
    return errorBody(500, core::statusCodeName(StatusCode::kInternal),
                     "errorResponse called with an OK status");
  }
  return errorBody(httpStatusFor(status.code()), core::statusCodeName(status.code()),
                   status.message());
}

namespace {

using internal::Handler;

struct MethodHandler {
  const char* method;
  Handler handler;
};

// Segments starting with ':' capture, in order, into Call::params.
struct Route {
  const char* pattern;
  MethodHandler methods[3];
};

constexpr Route kRoutes[] = {
    {"/healthz", {{"GET", internal::getHealth}}},
    {"/metrics", {{"GET", internal::getMetrics}}},
    {"/v1/openapi.json", {{"GET", internal::getOpenApi}}},
    {"/v1/capabilities", {{"GET", internal::getCapabilities}}},
    {"/v1/fabrics", {{"GET", internal::listFabrics}}},
    {"/v1/fabrics/:name", {{"GET", internal::getFabric}}},
    {"/v1/scenarios", {{"GET", internal::listScenarios}, {"POST", internal::createScenario}}},
    // Before /v1/scenarios/:name, which would otherwise capture "validate" and answer 405.
    {"/v1/scenarios/validate", {{"POST", internal::validateScenario}}},
    {"/v1/scenarios/:name",
     {{"GET", internal::getScenario},
      {"PUT", internal::replaceScenario},
      {"DELETE", internal::deleteScenario}}},
    {"/v1/runs", {{"GET", internal::listRuns}, {"POST", internal::createRun}}},
    {"/v1/runs/:id", {{"GET", internal::getRun}}},
    {"/v1/runs/:id/abort", {{"POST", internal::abortRun}}},
    {"/v1/runs/:id/samples", {{"GET", internal::getRunSamples}}},
    {"/v1/runs/:id/events", {{"GET", internal::getRunEvents}}},
    {"/v1/runs/:id/telemetry", {{"GET", internal::getRunTelemetry}}},
    {"/v1/faults", {{"GET", internal::listFaults}}},
    {"/v1/agents/register", {{"POST", internal::registerAgent}}},
    {"/v1/faults/:id/revert", {{"POST", internal::revertFault}}},
    {"/v1/suites", {{"GET", internal::listSuites}}},
    {"/v1/suites/:name",
     {{"GET", internal::getSuite},
      {"PUT", internal::replaceSuite},
      {"DELETE", internal::deleteSuite}}},
    {"/v1/suite-runs", {{"GET", internal::listSuiteRuns}, {"POST", internal::createSuiteRun}}},
    {"/v1/suite-runs/:id", {{"GET", internal::getSuiteRun}}},
    {"/v1/suite-runs/:id/abort", {{"POST", internal::abortSuiteRun}}},
    {"/v1/schedules", {{"GET", internal::listSchedules}, {"POST", internal::createSchedule}}},
    {"/v1/schedules/:id", {{"GET", internal::getSchedule}, {"DELETE", internal::deleteSchedule}}},
    {"/v1/whoami", {{"GET", internal::whoami}}},
    {"/v1/tokens", {{"GET", internal::listTokens}, {"POST", internal::createToken}}},
    {"/v1/tokens/:id", {{"DELETE", internal::revokeToken}}},
    {"/v1/audit", {{"GET", internal::listAudit}}},
};

// Matches decoded segments against a pattern; fills `params` with the captured segments.
bool matchRoute(std::string_view pattern, const std::vector<std::string>& segments,
                std::vector<std::string>* params) {
  params->clear();
  size_t index = 0;
  size_t pos = 1;  // skip the leading '/'
  while (pos <= pattern.size()) {
    size_t end = pattern.find('/', pos);
    if (end == std::string_view::npos) end = pattern.size();
    std::string_view part = pattern.substr(pos, end - pos);
    pos = end + 1;
    if (part.empty()) continue;
    if (index >= segments.size()) return false;
    if (part.front() == ':') {
      params->push_back(segments[index]);
    } else if (part != segments[index]) {
      return false;
    }
    ++index;
  }
  return index == segments.size();
}

std::string pathOf(const std::string& target) { return target.substr(0, target.find('?')); }

const Route* routeFor(const std::vector<std::string>& segments) {
  std::vector<std::string> params;
  for (const Route& route : kRoutes) {
    if (matchRoute(route.pattern, segments, &params)) return &route;
  }
  return nullptr;
}

Response dispatch(internal::Context& ctx, const Request& request) {
  auto target = parseTarget(request.target);
  if (!target) return errorResponse(target.status());

  std::vector<std::string> params;
  for (const Route& route : kRoutes) {
    if (!matchRoute(route.pattern, target->segments, &params)) continue;
    std::string allowed;
    for (const MethodHandler& m : route.methods) {
      if (m.method == nullptr) break;
      if (request.method == m.method) {
        internal::Call call{request, std::move(params), std::move(target->query)};
        return m.handler(ctx, call);
      }
      if (!allowed.empty()) allowed += ", ";
      allowed += m.method;
    }
    Response response = errorBody(405, "METHOD_NOT_ALLOWED",
                                  "method " + request.method + " is not allowed on " +
                                      pathOf(request.target) + "; allowed: " + allowed);
    response.headers.emplace_back("Allow", allowed);
    return response;
  }
  return errorResponse(Status(
      StatusCode::kNotFound, "no such endpoint: " + request.method + " " + pathOf(request.target)));
}

// --- authentication, authorization and audit (docs/api.md, "Authentication and roles") -------

// last_used_ms is for humans deciding which tokens are stale: minute resolution is plenty, and it
// saves a store write on nearly every request.
constexpr int64_t kTouchIntervalMs = 60 * 1000;

// The caller with auth disabled (`serve --no-auth`).
internal::Caller anonymousAdmin() { return {"anonymous", store::Role::kAdmin, 0}; }

Response unauthenticated(const std::string& message) {
  Response response = errorResponse(Status(StatusCode::kUnauthenticated, message));
  response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

// Resolves the credential of a request to ctx->caller, or returns the 401 to answer. The query
// token is accepted only where a browser cannot set headers (event streams).
std::optional<Response> authenticate(internal::Context* ctx, const Request& request,
                                     const std::map<std::string, std::string>* query) {
  std::string secret;
  if (auto header = request.headers.find("authorization"); header != request.headers.end()) {
    auto bearer = auth::parseBearer(header->second);
    if (!bearer) return unauthenticated(bearer.status().message());
    secret = std::move(bearer.value());
  } else if (query != nullptr && query->count("access_token") > 0) {
    secret = query->at("access_token");
  } else {
    return unauthenticated(query != nullptr ? "no token: send \"Authorization: Bearer <token>\" or "
                                              "?access_token=<token>"
                                            : "no token: send \"Authorization: Bearer <token>\"");
  }
  if (ctx->deps.store == nullptr) {
    return errorResponse(Status(StatusCode::kInternal, "no token store to authenticate against"));
  }
  auto token = auth::authenticateSecret(*ctx->deps.store, secret);
  if (!token) {
    if (token.status().code() == StatusCode::kUnauthenticated) {
      return unauthenticated(token.status().message());
    }
    return errorResponse(token.status().withContext("looking up the bearer token"));
  }
  ctx->caller = {token->name, token->role, token->id};
  const int64_t now_ms = core::wallNowMs();
  if (now_ms - token->last_used_ms >= kTouchIntervalMs) {
    if (Status s = ctx->deps.store->touchToken(token->id, now_ms); !s.isOk()) {
      core::logWarn("cannot record the use of token " + std::to_string(token->id) + ": " +
                    s.toString());
    }
  }
  return std::nullopt;
}

// Establishes ctx->caller for a request to `segments` and checks its role, or returns the 401 /
// 403 to answer. *identified says whether ctx->caller now names someone (a token, or the
// anonymous admin of --no-auth) for the audit log.
std::optional<Response> admit(internal::Context* ctx, auth::RefusalLimiter& refusals,
                              const Request& request, const std::vector<std::string>& segments,
                              const std::map<std::string, std::string>* query_token_source,
                              bool* identified) {
  *identified = false;
  if (!ctx->deps.require_auth) {
    ctx->caller = anonymousAdmin();
    *identified = true;
    return std::nullopt;
  }
  std::optional<store::Role> needed = auth::requiredRole(request.method, segments);
  if (!needed) return std::nullopt;  // public: the caller stays an anonymous viewer
  // A source that keeps presenting bad credentials costs no token lookup until its window ends.
  if (auto retry_ms = refusals.throttle(request.peer, ctx->deps.wall_now_ms())) {
    Response response =
        errorBody(429, "TOO_MANY_REQUESTS",
                  "too many requests without a valid token from " +
                      (request.peer.empty() ? std::string("this client") : request.peer) +
                      "; retry in " + std::to_string((*retry_ms + 999) / 1000) + " s");
    response.headers.emplace_back("Retry-After", std::to_string((*retry_ms + 999) / 1000));
    return response;
  }
  if (auto refused = authenticate(ctx, request, query_token_source)) return refused;
  *identified = true;
  if (ctx->caller.role < *needed) {
    return errorResponse(Status(
        StatusCode::kPermissionDenied,
        request.method + " " + pathOf(request.target) + " needs the " + store::roleName(*needed) +
            " role; token \"" + ctx->caller.name + "\" has " + store::roleName(ctx->caller.role)));
  }
  return std::nullopt;
}

// Every mutation, whatever its outcome, and every refusal of a credential goes to the audit log;
// unauthenticated refusals (401, and the 429 that follows too many) are coalesced per source.
void audit(const internal::Context& ctx, auth::RefusalLimiter& refusals, const Request& request,
           const Response& response, bool identified) {
  if (!identified && response.status == 429) return;  // counted by the limiter already
  if (!auth::isMutatingMethod(request.method) && response.status != 401 && response.status != 403) {
    return;
  }
  if (ctx.deps.store == nullptr) return;
  if (!identified && response.status == 401 &&
      refusals.refused(request.peer, ctx.deps.wall_now_ms()) ==
          auth::RefusalLimiter::Verdict::kCount) {
    return;
  }
  store::AuditRecord record;
  record.wall_ms = ctx.deps.wall_now_ms();
  record.actor = identified ? ctx.caller.name : "anonymous";
  record.role = identified ? store::roleName(ctx.caller.role) : "";
  record.method = request.method;
  record.path = pathOf(request.target);  // never the query: it may carry ?access_token=
  record.status = response.status;
  if (!identified && !request.peer.empty()) record.detail["source"] = request.peer;
  nlohmann::json body = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object()) {
    if (response.status >= 200 && response.status < 300) {
      if (auto id = body.find("id"); id != body.end() && id->is_number_integer()) {
        record.detail["id"] = *id;
      }
    } else if (auto error = body.find("error"); error != body.end() && error->is_object()) {
      record.detail["error"] = error->value("message", "");
    }
  }
  // Token names need not be unique (a rotated token may keep its name): the id tells them apart.
  if (identified && ctx.caller.token_id != 0) {
    record.detail["caller_token_id"] = ctx.caller.token_id;
  }
  if (auto id = ctx.deps.store->appendAudit(record); !id) {
    // The request has been answered (a mutation may already have happened): say so loudly
    // rather than turn a success into an error.
    core::logError("cannot write the audit record for " + request.method + " " + record.path +
                   " -> " + std::to_string(response.status) + ": " + id.status().toString());
  }
}

// audit() must not turn an answered request into an exception (a JSON type error, say).
void auditSafely(const internal::Context& ctx, auth::RefusalLimiter& refusals,
                 const Request& request, const Response& response, bool identified) {
  try {
    audit(ctx, refusals, request, response, identified);
  } catch (const std::exception& e) {
    core::logError(std::string("cannot write an audit record: ") + e.what());
  }
}

Response internalError(const std::exception* e) {
  return errorResponse(Status(StatusCode::kInternal,
                              e != nullptr ? std::string("internal error: ") + e->what()
                                           : std::string("internal error: unknown exception")));
}

}  // namespace

std::vector<RouteInfo> routeTable() {
  std::vector<RouteInfo> table;
  for (const Route& route : kRoutes) {
    RouteInfo info{route.pattern, {}};
    for (const MethodHandler& m : route.methods) {
      if (m.method != nullptr) info.methods.emplace_back(m.method);
    }
    table.push_back(std::move(info));
  }
  return table;
}

bool isBulkRead(const Request& request) {
  if (request.method != "GET") return false;
  auto target = parseTarget(request.target);
  if (!target) return false;
  const std::vector<std::string>& segments = target->segments;
  if (segments.size() != 4 || segments[0] != "v1" || segments[1] != "runs") return false;
  const std::string& what = segments[3];
  return what == "samples" || what == "events" || what == "telemetry" || what == "stream";
}

std::string routeOf(const std::string& target) {
  auto parsed = parseTarget(target);
  if (!parsed) return "unmatched";
  const Route* route = routeFor(parsed->segments);
  return route != nullptr ? route->pattern : "unmatched";
}

Api::Api(ApiDeps deps) : deps_(std::move(deps)), refusals_(deps_.refusal_limits) {
  if (!deps_.wall_now_ms) deps_.wall_now_ms = core::wallNowMs;
}

void Api::writeRefusalSummaries(bool all) {
  const int64_t now_ms = deps_.wall_now_ms();
  for (const auto& summary : refusals_.takeEnded(now_ms, all)) {
    if (deps_.store == nullptr) continue;
    store::AuditRecord record;
    record.wall_ms = now_ms;
    record.actor = "anonymous";
    record.status = 401;
    record.detail = {{"source", summary.source},
                     {"coalesced", summary.refusals},
                     {"throttled", summary.throttled},
                     {"window_start_ms", summary.window_start_ms},
                     {"window_ms", deps_.refusal_limits.window_ms}};
    if (auto id = deps_.store->appendAudit(record); !id) {
      core::logError("cannot write the audit summary of " + std::to_string(summary.refusals) +
                     " refusals from " + summary.source + ": " + id.status().toString());
    }
  }
}

void Api::flushRefusalSummaries() { writeRefusalSummaries(true); }

Response Api::handle(const Request& request) {
  const int64_t started_ns = core::steadyNowNs();
  Response response = handleTimed(request);
  if (deps_.observe_request) {
    deps_.observe_request(request.method, routeOf(request.target), response.status,
                          static_cast<double>(core::steadyNowNs() - started_ns) / 1e9);
  }
  return response;
}

Response Api::handleTimed(const Request& request) {
  writeRefusalSummaries(false);
  internal::Context ctx{deps_, scenario_mu_, {}};
  Response response;
  bool identified = false;
  try {
    auto target = parseTarget(request.target);
    if (!target) {
      response = errorResponse(target.status());
    } else if (auto refused =
                   admit(&ctx, refusals_, request, target->segments, nullptr, &identified)) {
      response = std::move(*refused);
    } else {
      response = dispatch(ctx, request);
    }
  } catch (const std::exception& e) {
    response = internalError(&e);
  } catch (...) {
    response = internalError(nullptr);
  }
  auditSafely(ctx, refusals_, request, response, identified);
  return response;
}

std::unique_ptr<core::EventStream> Api::openStream(const Request& request, Response* refusal) {
  *refusal = Response();
  refusal->status = 0;  // not a stream: the transport calls handle()
  if (request.method != "GET") return nullptr;
  auto target = parseTarget(request.target);
  if (!target) return nullptr;  // handle() answers the 400
  const std::vector<std::string>& segments = target->segments;
  if (segments.size() != 4 || segments[0] != "v1" || segments[1] != "runs" ||
      segments[3] != "stream") {
    return nullptr;
  }
  internal::Context ctx{deps_, scenario_mu_, {}};
  bool identified = false;
  std::unique_ptr<core::EventStream> stream;
  try {
    if (auto refused = admit(&ctx, refusals_, request, segments, &target->query, &identified)) {
      *refusal = std::move(*refused);
    } else {
      internal::Call call{request, {segments[2]}, std::move(target->query)};
      stream = internal::openRunStream(ctx, call, refusal);
    }
  } catch (const std::exception& e) {
    *refusal = internalError(&e);
  } catch (...) {
    *refusal = internalError(nullptr);
  }
  if (stream == nullptr && refusal->status != 0) {
    auditSafely(ctx, refusals_, request, *refusal, identified);
  }
  return stream;
}

}  // namespace fabric_chaos::api
