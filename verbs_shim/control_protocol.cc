#include "verbs_shim/control_protocol.h"

namespace fabric_chaos::verbs_shim {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

core::Result<ArmRequest> parseArm(const json& doc) {
  for (const auto& [key, value] : doc.items()) {
    if (key != "arm" && key != "lease_ms" && key != "seed") return invalid(key + ": unknown field");
  }
  const json& faults = doc["arm"];
  if (!faults.is_array() || faults.empty()) {
    return invalid("arm: must be a non-empty array of faults");
  }
  ArmRequest request;
  for (size_t i = 0; i < faults.size(); ++i) {
    auto fault = shimFaultFromJson(faults[i]);
    if (!fault.isOk()) {
      return invalid("arm[" + std::to_string(i) + "]." + fault.status().message());
    }
    request.faults.push_back(*fault);
  }
  if (doc.contains("lease_ms")) {
    const json& lease = doc["lease_ms"];
    if (!lease.is_number_integer() || lease.get<int64_t>() < kMinLeaseMs ||
        lease.get<int64_t>() > kMaxLeaseMs) {
      return invalid("lease_ms: must be an integer from " + std::to_string(kMinLeaseMs) + " to " +
                     std::to_string(kMaxLeaseMs));
    }
    request.lease_ms = lease.get<int64_t>();
  }
  if (doc.contains("seed")) {
    if (!doc["seed"].is_number_integer() || doc["seed"].get<int64_t>() < 0) {
      return invalid("seed: must be a non-negative integer");
    }
    request.seed = doc["seed"].get<uint64_t>();
  }
  return request;
}

}  // namespace

core::Result<ControlRequest> parseControlRequest(const std::string& line) {
  const json doc = json::parse(line, nullptr, false);
  if (!doc.is_object() || doc.size() == 0) {
    return invalid("a request is one JSON object: arm, renew, disarm or status");
  }
  if (doc.contains("arm")) {
    auto arm = parseArm(doc);
    if (!arm.isOk()) return arm.status();
    return ControlRequest(*arm);
  }
  if (doc.size() != 1 || !doc.begin().value().is_boolean() || !doc.begin().value().get<bool>()) {
    return invalid(
        "a request is {\"arm\": [...]}, {\"renew\": true}, {\"disarm\": true} or "
        "{\"status\": true}");
  }
  const std::string verb = doc.begin().key();
  if (verb == "renew") return ControlRequest(RenewRequest{});
  if (verb == "disarm") return ControlRequest(DisarmRequest{});
  if (verb == "status") return ControlRequest(StatusRequest{});
  return invalid(verb + ": unknown request (arm, renew, disarm or status)");
}

nlohmann::json controlError(const std::string& message) {
  return {{"ok", false}, {"error", message}};
}

}  // namespace fabric_chaos::verbs_shim
