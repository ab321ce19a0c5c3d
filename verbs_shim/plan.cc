#include "verbs_shim/plan.h"

#include <array>
#include <cerrno>
#include <cmath>

namespace fabric_chaos::verbs_shim {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

// In enum ibv_wc_status order (verbs.h, rdma-core 44): the index is the status.
constexpr std::array<const char*, 24> kStatusNames = {"success",
                                                      "loc_len_err",
                                                      "loc_qp_op_err",
                                                      "loc_eec_op_err",
                                                      "loc_prot_err",
                                                      "wr_flush_err",
                                                      "mw_bind_err",
                                                      "bad_resp_err",
                                                      "loc_access_err",
                                                      "rem_inv_req_err",
                                                      "rem_access_err",
                                                      "rem_op_err",
                                                      "retry_exc_err",
                                                      "rnr_retry_exc_err",
                                                      "loc_rdd_viol_err",
                                                      "rem_inv_rd_req_err",
                                                      "rem_abort_err",
                                                      "inv_eecn_err",
                                                      "inv_eec_state_err",
                                                      "fatal_err",
                                                      "resp_timeout_err",
                                                      "general_err",
                                                      "tm_err",
                                                      "tm_rndv_incomplete"};

Status invalid(const std::string& field, const std::string& why) {
  return Status(StatusCode::kInvalidArgument, field + ": " + why);
}

Status onlyFields(const json& object, const std::string& where,
                  std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* name : allowed) known = known || key == name;
    if (!known) return invalid(where + key, "unknown field");
  }
  return Status::ok();
}

Status readInt(const json& object, const char* name, const std::string& where, int64_t low,
               int64_t& out) {
  if (!object.contains(name)) return Status::ok();
  const json& value = object[name];
  if (!value.is_number_integer() || value.get<int64_t>() < low) {
    return invalid(where + name, "must be an integer of at least " + std::to_string(low));
  }
  out = value.get<int64_t>();
  return Status::ok();
}

}  // namespace

const char* describe(ShimFaultKind kind) {
  switch (kind) {
    case ShimFaultKind::kCqeError:
      return "cqe_error";
    case ShimFaultKind::kPostSendFail:
      return "post_send_fail";
    case ShimFaultKind::kPostRecvFail:
      return "post_recv_fail";
  }
  return "cqe_error";
}

std::optional<int> wcStatusOf(std::string_view name) {
  for (size_t i = 0; i < kStatusNames.size(); ++i) {
    if (name == kStatusNames[i]) return static_cast<int>(i);
  }
  return std::nullopt;
}

const char* wcStatusName(int status) {
  if (status < 0 || static_cast<size_t>(status) >= kStatusNames.size()) return nullptr;
  return kStatusNames[static_cast<size_t>(status)];
}

core::Result<ShimFault> shimFaultFromJson(const json& doc) {
  if (!doc.is_object()) return invalid("fault", "must be an object");
  FC_RETURN_IF_ERROR(onlyFields(doc, "", {"kind", "filter", "trigger", "status", "errno"}));
  ShimFault fault;
  const std::string kind = doc.value("kind", "");
  if (kind == "cqe_error") {
    fault.kind = ShimFaultKind::kCqeError;
  } else if (kind == "post_send_fail") {
    fault.kind = ShimFaultKind::kPostSendFail;
  } else if (kind == "post_recv_fail") {
    fault.kind = ShimFaultKind::kPostRecvFail;
  } else {
    return invalid("kind",
                   "must be cqe_error, post_send_fail or post_recv_fail, not \"" + kind + "\"");
  }
  if (doc.contains("filter")) {
    const json& filter = doc["filter"];
    if (!filter.is_object()) return invalid("filter", "must be an object");
    FC_RETURN_IF_ERROR(onlyFields(filter, "filter.", {"qp_num", "device"}));
    if (filter.contains("qp_num")) {
      const json& qp = filter["qp_num"];
      if (!qp.is_number_integer() || qp.get<int64_t>() < 0 || qp.get<int64_t>() > 0xffffff) {
        return invalid("filter.qp_num", "must be a QP number (0 to 2^24-1)");
      }
      fault.filter.qp_num = qp.get<uint32_t>();
    }
    if (filter.contains("device")) {
      if (!filter["device"].is_string()) return invalid("filter.device", "must be a string");
      fault.filter.device = filter["device"].get<std::string>();
    }
  }
  if (doc.contains("trigger")) {
    const json& trigger = doc["trigger"];
    if (!trigger.is_object()) return invalid("trigger", "must be an object");
    FC_RETURN_IF_ERROR(
        onlyFields(trigger, "trigger.", {"probability", "every_nth", "after_ms", "count"}));
    if (trigger.contains("probability")) {
      const json& p = trigger["probability"];
      if (!p.is_number() || !std::isfinite(p.get<double>()) || p.get<double>() < 0 ||
          p.get<double>() > 1) {
        return invalid("trigger.probability", "must be a number from 0 to 1");
      }
      fault.trigger.probability = p.get<double>();
    }
    FC_RETURN_IF_ERROR(readInt(trigger, "every_nth", "trigger.", 1, fault.trigger.every_nth));
    FC_RETURN_IF_ERROR(readInt(trigger, "after_ms", "trigger.", 0, fault.trigger.after_ms));
    FC_RETURN_IF_ERROR(readInt(trigger, "count", "trigger.", 1, fault.trigger.count));
  }
  if (doc.contains("status")) {
    if (fault.kind != ShimFaultKind::kCqeError) return invalid("status", "is for cqe_error only");
    const auto status =
        doc["status"].is_string() ? wcStatusOf(doc["status"].get<std::string>()) : std::nullopt;
    if (!status || *status == 0) {
      return invalid("status",
                     "must name an error status, such as retry_exc_err, "
                     "rem_access_err or wr_flush_err");
    }
    fault.status = *status;
  }
  if (doc.contains("errno")) {
    if (fault.kind == ShimFaultKind::kCqeError) return invalid("errno", "is for post_*_fail only");
    const std::string name = doc["errno"].is_string() ? doc["errno"].get<std::string>() : "";
    if (name == "ENOMEM") {
      fault.error = ENOMEM;
    } else if (name == "EAGAIN") {
      fault.error = EAGAIN;
    } else if (name == "EINVAL") {
      fault.error = EINVAL;
    } else {
      return invalid("errno", "must be ENOMEM, EAGAIN or EINVAL");
    }
  }
  return fault;
}

json toJson(const ShimFault& fault) {
  json filter = json::object();
  if (fault.filter.qp_num) filter["qp_num"] = *fault.filter.qp_num;
  if (!fault.filter.device.empty()) filter["device"] = fault.filter.device;
  json doc = {{"kind", describe(fault.kind)},
              {"filter", filter},
              {"trigger",
               {{"probability", fault.trigger.probability},
                {"every_nth", fault.trigger.every_nth},
                {"after_ms", fault.trigger.after_ms},
                {"count", fault.trigger.count}}}};
  if (fault.kind == ShimFaultKind::kCqeError) {
    doc["status"] = wcStatusName(fault.status) != nullptr ? wcStatusName(fault.status) : "";
  } else {
    doc["errno"] = fault.error == EAGAIN ? "EAGAIN" : fault.error == EINVAL ? "EINVAL" : "ENOMEM";
  }
  if (fault.trigger.count < 0) doc["trigger"].erase("count");
  return doc;
}

TriggerState::TriggerState(const ShimTrigger& trigger, uint64_t seed)
    : trigger_(trigger), rng_(seed == 0 ? 0x9e3779b97f4a7c15ULL : seed) {}

double TriggerState::nextUniform() {
  // xorshift64*: fast, good enough to decide "this one or not", reproducible from the seed.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return static_cast<double>((rng_ * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

bool TriggerState::fire(int64_t elapsed_ms) {
  if (elapsed_ms < trigger_.after_ms) return false;
  if (trigger_.count >= 0 && fired_ >= trigger_.count) return false;
  ++seen_;
  if (seen_ % trigger_.every_nth != 0) return false;
  if (trigger_.probability < 1.0 && nextUniform() >= trigger_.probability) return false;
  ++fired_;
  return true;
}

}  // namespace fabric_chaos::verbs_shim
