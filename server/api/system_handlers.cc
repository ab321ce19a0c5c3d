// /healthz, /metrics, /v1/capabilities and /v1/fabrics.

#include <algorithm>

#include "agent/agent_wire.h"
#include "injectors/model/kind_spec.h"
#include "scenarios/engine/fabric_agents.h"
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

Response getMetrics(Context& ctx, const Call&) {
  if (!ctx.deps.metrics_text) {
    return errorResponse(Status(StatusCode::kNotSupported, "this server exports no metrics"));
  }
  Response response;
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";  // Prometheus text format
  response.body = ctx.deps.metrics_text();
  return response;
}

Response getCapabilities(Context& ctx, const Call&) {
  json kinds = json::array();
  if (ctx.deps.capabilities) {
    for (const injectors::KindInfo& info : ctx.deps.capabilities()) {
      json kind{{"kind", info.kind},
                {"description", info.description},
                {"available", info.available},
                {"reason", info.reason},
                {"backend", info.backend}};
      // The kind's declaration (parameters, phases, composition, lifecycle): what the dashboard's
      // editor and clients build forms and checks from.
      if (const injectors::KindSpec* spec = injectors::findKindSpec(info.kind)) {
        kind["schema"] = injectors::toJson(*spec);
      }
      kinds.push_back(std::move(kind));
    }
  }
  return jsonResponse(200, json{{"version", ctx.deps.version}, {"fault_kinds", kinds}});
}

namespace {

// One host's hosts[].agent in GET /v1/fabrics/{name} (docs/api.md).
json hostAgentJson(const scenarios::HostAgentReport& report) {
  json out{{"name", report.agent.isLocal() ? std::string("local") : report.agent.name},
           {"reachable", report.status.isOk()}};
  if (!report.status.isOk()) {
    out["error"] = report.status.message();
    return out;
  }
  const agent::AgentInfo& info = report.info;
  json kinds = json::array();
  for (const injectors::KindInfo& kind : info.kinds) {
    kinds.push_back({{"kind", kind.kind},
                     {"available", kind.available},
                     {"reason", kind.reason},
                     {"backend", kind.backend}});
  }
  json netdevs = json::array();
  for (const agent::AgentNetdev& dev : info.netdevs) {
    netdevs.push_back(
        {{"name", dev.name}, {"netns", dev.netns}, {"operstate", dev.operstate}, {"mac", dev.mac}});
  }
  json rdma = json::array();
  for (const sys::RdmaDevice& dev : info.rdma_devices) {
    json ports = json::array();
    for (const sys::RdmaPortState& port : dev.ports) {
      ports.push_back(
          {{"port", port.port}, {"state", port.state}, {"gid_table_size", port.gid_table_size}});
    }
    rdma.push_back({{"name", dev.name}, {"ports", ports}});
  }
  out["version"] = info.version;
  out["hostname"] = info.hostname;
  out["clock_offset_ms"] = report.clock_offset_ms;
  out["round_trip_ms"] = report.round_trip_ms;
  out["kinds"] = kinds;
  out["netdevs"] = netdevs;
  out["rdma_devices"] = rdma;
  json shims = json::array();
  for (const sys::ShimProcess& shim : info.verbs_shims)
    shims.push_back(agent::shimProcessToJson(shim));
  out["verbs_shims"] = shims;
  return out;
}

}  // namespace

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
  json body = scenarios::toJson(fabric.value());
  if (ctx.deps.fabric_agents && body.contains("hosts")) {
    // Agents are asked here and not in the list, which must stay cheap (docs/api.md).
    const auto reports = ctx.deps.fabric_agents(fabric.value());
    for (auto& host : body["hosts"]) {
      const std::string host_name = host.value("name", "");
      auto it =
          std::find_if(reports.begin(), reports.end(),
                       [&](const scenarios::HostAgentReport& r) { return r.host == host_name; });
      if (it != reports.end()) host["agent"] = hostAgentJson(*it);
    }
  }
  return jsonResponse(200, body);
}

}  // namespace fabric_chaos::api::internal
