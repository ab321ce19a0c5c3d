// /v1/agents/register: an agent started with --register (docs/deployment.md) says where the
// controller reaches it and what it is; serve records it in a real fabric under its state
// directory (ApiDeps::register_agent), so a fleet needs no hand-written host list.

#include "scenarios/registration.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;

Response registerAgent(Context& ctx, const Call& call) {
  if (!ctx.deps.register_agent) {
    return errorResponse(
        Status(StatusCode::kNotSupported, "this server does not take agent registrations"));
  }
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  auto registration = scenarios::registrationFromJson(*body);
  if (!registration) return errorResponse(registration.status());
  auto recorded = ctx.deps.register_agent(*registration);
  if (!recorded) return errorResponse(recorded.status());
  return jsonResponse(200, *recorded);
}

}  // namespace fabric_chaos::api::internal
