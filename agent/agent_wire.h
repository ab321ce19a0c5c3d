#pragma once
// The agent API's wire format, shared by AgentService (which answers) and RemoteAgent (which
// asks). Pure: JSON in, values out, no I/O; any thread.

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent.h"
#include "core/status.h"
#include "injectors/sys/rdma_devices.h"

namespace fabric_chaos::agent {

// Strict decoding, for every body the agent API takes: kInvalidArgument naming the field.
core::Status invalid(const std::string& field, const std::string& problem);
// The first field of doc not in `allowed` (named with prefix) is refused as unknown.
core::Status onlyFields(const nlohmann::json& doc, std::initializer_list<std::string_view> allowed,
                        const std::string& prefix = "");
// An integer field in lo..hi, or fallback when absent or null.
core::Result<int64_t> intField(const nlohmann::json& doc, const std::string& name, int64_t lo,
                               int64_t hi, int64_t fallback);

// A workload rank. The decoder rejects unknown fields (a typo must not silently change a run)
// with kInvalidArgument naming the field.
nlohmann::json rankSpecToJson(const RankSpec& spec);
core::Result<RankSpec> rankSpecFromJson(const nlohmann::json& doc);
nlohmann::json kindInfoToJson(const injectors::KindInfo& info);
injectors::KindInfo kindInfoFromJson(const nlohmann::json& doc);
// GET /agent/v1/describe's body. The decoder ignores unknown fields (a newer agent may report
// more) but refuses a known field of the wrong type (kInvalidArgument).
// One shim-loaded program as info's "verbs_shims" carry it: {"pid", "comm", "rank" (null when
// unknown), "devices", "armed"} (the socket path stays on the agent's host).
nlohmann::json shimProcessToJson(const sys::ShimProcess& shim);
sys::ShimProcess shimProcessFromJson(const nlohmann::json& doc);
nlohmann::json agentInfoToJson(const AgentInfo& info);
core::Result<AgentInfo> agentInfoFromJson(const nlohmann::json& doc);
// GET /agent/v1/rdma/counters' body: {"ports": [{"device", "port", "counters": {name: value}}]}.
// The decoder refuses a port without device or port number, or a counter that is not an integer.
nlohmann::json rdmaCountersToJson(const std::vector<sys::RdmaPortCounters>& ports);
core::Result<std::vector<sys::RdmaPortCounters>> rdmaCountersFromJson(const nlohmann::json& doc);

}  // namespace fabric_chaos::agent
