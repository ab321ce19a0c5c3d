// /healthz, /v1/capabilities and /v1/fabrics.

#include "scenarios/topology.h"
#include "server/api/handlers.h"
#include "server/api/util.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Response getHealth(Context& ctx, const Call&) {
  return jsonResponse(200, json{{"status", "ok"}, {"version", ctx.deps.version}});
}

Response getCapabilities(Context& ctx, const Call&) {
  json kinds = json::array();
  if (ctx.deps.capabilities) {
    for (const injectors::KindInfo& info : ctx.deps.capabilities()) {
      kinds.push_back({{"kind", info.kind},
                       {"description", info.description},
                       {"available", info.available},
                       {"reason", info.reason},
                       {"backend", info.backend}});
    }
  }
  return jsonResponse(200, json{{"version", ctx.deps.version}, {"fault_kinds", kinds}});
}

Response listFabrics(Context& ctx, const Call&) {
  json fabrics = json::array();
  if (ctx.deps.fabrics != nullptr) {
    for (const scenarios::Fabric& fabric : ctx.deps.fabrics->list()) {
      fabrics.push_back(scenarios::toJson(fabric));
    }
  }
  return jsonResponse(200, json{{"fabrics", fabrics}});
}

Response getFabric(Context& ctx, const Call& call) {
  const std::string& name = call.params.at(0);
  if (ctx.deps.fabrics == nullptr) {
    return errorResponse(Status(StatusCode::kNotFound, "fabric " + name + " is not registered"));
  }
  auto fabric = ctx.deps.fabrics->get(name);
  if (!fabric) return errorResponse(fabric.status());
  return jsonResponse(200, scenarios::toJson(fabric.value()));
}

}  // namespace fabric_chaos::api::internal
