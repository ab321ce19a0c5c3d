#pragma once
// The /v1 REST API as a pure function from Request to Response: no sockets, no blocking on the
// fabric (runs are handed to the RunService). The HTTP transport (server/http) calls handle() from
// its worker threads; handle() is thread-safe because its dependencies are.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/http_message.h"
#include "injectors/injector.h"
#include "scenarios/engine/fabric_agents.h"
#include "scenarios/registration.h"
#include "scenarios/services.h"
#include "scenarios/validate.h"
#include "server/auth/refusal_limiter.h"
#include "store/store.h"

namespace fabric_chaos::api {

using Request = core::HttpRequest;
using Response = core::HttpResponse;

struct ApiDeps {
  store::Store* store = nullptr;
  scenarios::RunService* runs = nullptr;
  scenarios::FabricCatalog* fabrics = nullptr;
  std::function<std::vector<injectors::KindInfo>()> capabilities;
  // The kind catalog of one fabric, from its hosts' agents (scenarios/engine/fabric_agents.h).
  scenarios::KindCatalogFor kinds;
  // GET /v1/fabrics/{name}'s hosts[].agent: each host's agent asked now (the list stays cheap).
  std::function<std::vector<scenarios::HostAgentReport>(const scenarios::Fabric&)> fabric_agents;
  std::string version;
  std::string default_fabric = "netns-lab";
  scenarios::SuiteService* suites = nullptr;
  scenarios::FaultService* faults = nullptr;  // GET /v1/faults works without; revert needs it
  // The in-progress view of a run (engine live status as JSON), or null when it is not running.
  std::function<nlohmann::json(int64_t run_id)> live;
  // POST /v1/agents/register: records the agent in its real fabric and answers what it did
  // ({"fabric", "host", "created", "hosts"}); unset = 501.
  std::function<core::Result<nlohmann::json>(const scenarios::AgentRegistration&)> register_agent;
  // false = `serve --no-auth`: every caller is an anonymous admin.
  bool require_auth = true;
  // Unauthenticated refusals: one audit row per source and window, 429 past the limit.
  auth::RefusalLimiterOptions refusal_limits;
  std::function<int64_t()> wall_now_ms;  // default core::wallNowMs
  // GET /metrics: the Prometheus text exposition of serve's metrics; unset = 501.
  std::function<std::string()> metrics_text;
  // Called once per request that handle() answers (streams excluded), with the pattern of the
  // route that served it (routeOf), its status and how long handle() took.
  std::function<void(const std::string& method, const std::string& route, int status,
                     double seconds)>
      observe_request;
};

// One route the API serves: its pattern (segments starting with ':' capture, "/v1/runs/:id") and
// its methods.
struct RouteInfo {
  std::string pattern;
  std::vector<std::string> methods;
};
// Every route handle() dispatches, in matching order (the OpenAPI document covers exactly these).
std::vector<RouteInfo> routeTable();
// The pattern of the route that serves `target` ("/v1/runs/:id" for "/v1/runs/7?x=1"), or
// "unmatched": a label of bounded cardinality for request metrics.
std::string routeOf(const std::string& target);
// Whether a request is a bulk read: a run's samples, events, telemetry or stream, which may carry
// megabytes. The transport runs those on their own low-priority threads (http::ServerOptions).
bool isBulkRead(const Request& request);

class Api {
 public:
  explicit Api(ApiDeps deps);
  // Authenticates (docs/api.md), authorizes by role, dispatches, and writes the audit log.
  Response handle(const Request& request);

  // For GET /v1/runs/{id}/stream: authenticates like handle() (also accepting ?access_token=)
  // and returns the event stream. Returns nullptr with *refusal left at status 0 when the target
  // is not a stream endpoint (the transport then calls handle()); nullptr with *refusal set when
  // the request is refused (401/403/404...).
  std::unique_ptr<core::EventStream> openStream(const Request& request, Response* refusal);

  // Writes the summary rows of every unauthenticated-refusal window still open (serve calls it
  // on the way out, so no count is lost); handle() writes those of ended windows as it goes.
  void flushRefusalSummaries();

 private:
  void writeRefusalSummaries(bool all);
  Response handleTimed(const Request& request);  // handle() without the request metrics

  ApiDeps deps_;
  auth::RefusalLimiter refusals_;
  std::mutex scenario_mu_;  // makes scenario create-if-absent / replace / delete atomic
};

// {"error": {"code": "NOT_FOUND", "message": "..."}} with the HTTP status for the code.
Response errorResponse(const core::Status& status);
using core::httpStatusFor;

}  // namespace fabric_chaos::api
