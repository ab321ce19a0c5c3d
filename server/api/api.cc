#include "server/api/api.h"

#include <exception>
#include <string_view>
#include <utility>

#include "server/api/handlers.h"
#include "server/api/util.h"

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
    {"/v1/capabilities", {{"GET", internal::getCapabilities}}},
    {"/v1/fabrics", {{"GET", internal::listFabrics}}},
    {"/v1/fabrics/:name", {{"GET", internal::getFabric}}},
    {"/v1/scenarios", {{"GET", internal::listScenarios}, {"POST", internal::createScenario}}},
    {"/v1/scenarios/:name",
     {{"GET", internal::getScenario},
      {"PUT", internal::replaceScenario},
      {"DELETE", internal::deleteScenario}}},
    {"/v1/runs", {{"GET", internal::listRuns}, {"POST", internal::createRun}}},
    {"/v1/runs/:id", {{"GET", internal::getRun}}},
    {"/v1/runs/:id/abort", {{"POST", internal::abortRun}}},
    {"/v1/runs/:id/samples", {{"GET", internal::getRunSamples}}},
    {"/v1/runs/:id/events", {{"GET", internal::getRunEvents}}},
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

}  // namespace

Api::Api(ApiDeps deps) : deps_(std::move(deps)) {}

Response Api::handle(const Request& request) {
  internal::Context ctx{deps_, scenario_mu_, {}};
  try {
    return dispatch(ctx, request);
  } catch (const std::exception& e) {
    return errorResponse(Status(StatusCode::kInternal, std::string("internal error: ") + e.what()));
  } catch (...) {
    return errorResponse(Status(StatusCode::kInternal, "internal error: unknown exception"));
  }
}

}  // namespace fabric_chaos::api
