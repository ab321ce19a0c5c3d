#pragma once
// The /v1 REST API as a pure function from Request to Response: no sockets, no blocking on the
// fabric (runs are handed to the RunService). The HTTP transport (server/http) calls handle() from
// its worker threads; handle() is thread-safe because its dependencies are.

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/http_message.h"
#include "injectors/injector.h"
#include "scenarios/services.h"
#include "scenarios/validate.h"
#include "server/store/store.h"

namespace fabric_chaos::api {

using Request = core::HttpRequest;
using Response = core::HttpResponse;

struct ApiDeps {
  store::Store* store = nullptr;
  scenarios::RunService* runs = nullptr;
  scenarios::FabricCatalog* fabrics = nullptr;
  std::function<std::vector<injectors::KindInfo>()> capabilities;
  std::function<scenarios::KindCatalog()> kinds;
  std::string version;
  std::string default_fabric = "netns-lab";
};

class Api {
 public:
  explicit Api(ApiDeps deps);
  Response handle(const Request& request);

 private:
  ApiDeps deps_;
  std::mutex scenario_mu_;  // makes scenario create-if-absent / replace / delete atomic
};

// {"error": {"code": "NOT_FOUND", "message": "..."}} with the HTTP status for the code.
Response errorResponse(const core::Status& status);
using core::httpStatusFor;

}  // namespace fabric_chaos::api
