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

namespace {

constexpr std::array<std::pair<ShimFaultKind, const char*>, 6> kKindNames = {{
    {ShimFaultKind::kCqeError, "cqe_error"},
    {ShimFaultKind::kQpError, "qp_error"},
    {ShimFaultKind::kPostSendFail, "post_send_fail"},
    {ShimFaultKind::kPostRecvFail, "post_recv_fail"},
    {ShimFaultKind::kCompletionDelay, "completion_delay"},
    {ShimFaultKind::kRegMrFail, "reg_mr_fail"},
}};
constexpr std::array<std::pair<ShimOpcode, const char*>, 5> kOpcodeNames = {{
    {ShimOpcode::kSend, "send"},
    {ShimOpcode::kRdmaWrite, "rdma_write"},
    {ShimOpcode::kRdmaRead, "rdma_read"},
    {ShimOpcode::kAtomic, "atomic"},
    {ShimOpcode::kRecv, "recv"},
}};
constexpr std::array<std::pair<ShimQpType, const char*>, 3> kQpTypeNames = {{
    {ShimQpType::kRc, "rc"},
    {ShimQpType::kUc, "uc"},
    {ShimQpType::kUd, "ud"},
}};
constexpr std::array<std::pair<int, const char*>, 4> kErrnoNames = {{
    {ENOMEM, "ENOMEM"},
    {EAGAIN, "EAGAIN"},
    {EINVAL, "EINVAL"},
    {EFAULT, "EFAULT"},
}};
constexpr int64_t kMaxDelayMs = 600000;

template <typename T, size_t N>
const char* nameIn(const std::array<std::pair<T, const char*>, N>& names, T value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return names.front().second;
}

template <typename T, size_t N>
std::optional<T> valueIn(const std::array<std::pair<T, const char*>, N>& names,
                         std::string_view name) {
  for (const auto& [v, n] : names) {
    if (name == n) return v;
  }
  return std::nullopt;
}

template <typename T, size_t N>
std::string choices(const std::array<std::pair<T, const char*>, N>& names) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    out += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i].second);
  }
  return out;
}

// A string member naming one of `names`, or an error naming the field and the choices.
template <typename T, size_t N>
core::Result<T> readChoice(const json& object, const char* name, const std::string& field,
                           const std::array<std::pair<T, const char*>, N>& names) {
  const json& value = object[name];
  const auto found = value.is_string() ? valueIn(names, value.get<std::string>()) : std::nullopt;
  if (!found) return invalid(field, "must be " + choices(names));
  return *found;
}

Status readFilter(const json& filter, ShimFault& fault) {
  if (!filter.is_object()) return invalid("filter", "must be an object");
  FC_RETURN_IF_ERROR(onlyFields(filter, "filter.", {"qp_num", "qp_type", "opcode", "device"}));
  if (!takesQpFilters(fault.kind)) {
    for (const char* name : {"qp_num", "qp_type", "opcode"}) {
      if (filter.contains(name)) {
        return invalid(std::string("filter.") + name,
                       std::string(describe(fault.kind)) + " sees no QP; only device applies");
      }
    }
  }
  if (filter.contains("qp_num")) {
    const json& qp = filter["qp_num"];
    if (!qp.is_number_integer() || qp.get<int64_t>() < 0 || qp.get<int64_t>() > 0xffffff) {
      return invalid("filter.qp_num", "must be a QP number (0 to 2^24-1)");
    }
    fault.filter.qp_num = qp.get<uint32_t>();
  }
  if (filter.contains("qp_type")) {
    auto type = readChoice(filter, "qp_type", "filter.qp_type", kQpTypeNames);
    if (!type.isOk()) return type.status();
    fault.filter.qp_type = *type;
  }
  if (filter.contains("opcode")) {
    auto opcode = readChoice(filter, "opcode", "filter.opcode", kOpcodeNames);
    if (!opcode.isOk()) return opcode.status();
    const bool recv = *opcode == ShimOpcode::kRecv;
    if ((fault.kind == ShimFaultKind::kPostSendFail && recv) ||
        (fault.kind == ShimFaultKind::kPostRecvFail && !recv)) {
      return invalid("filter.opcode", std::string(describe(fault.kind)) + " never sees " +
                                          describe(*opcode) + " work requests");
    }
    fault.filter.opcode = *opcode;
  }
  if (filter.contains("device")) {
    if (!filter["device"].is_string()) return invalid("filter.device", "must be a string");
    fault.filter.device = filter["device"].get<std::string>();
  }
  return Status::ok();
}

Status readTrigger(const json& trigger, ShimTrigger& out) {
  if (!trigger.is_object()) return invalid("trigger", "must be an object");
  FC_RETURN_IF_ERROR(
      onlyFields(trigger, "trigger.", {"probability", "every_nth", "after_ms", "count"}));
  if (trigger.contains("probability")) {
    const json& p = trigger["probability"];
    if (!p.is_number() || !std::isfinite(p.get<double>()) || p.get<double>() < 0 ||
        p.get<double>() > 1) {
      return invalid("trigger.probability", "must be a number from 0 to 1");
    }
    out.probability = p.get<double>();
  }
  FC_RETURN_IF_ERROR(readInt(trigger, "every_nth", "trigger.", 1, out.every_nth));
  FC_RETURN_IF_ERROR(readInt(trigger, "after_ms", "trigger.", 0, out.after_ms));
  return readInt(trigger, "count", "trigger.", 1, out.count);
}

}  // namespace

const char* describe(ShimFaultKind kind) { return nameIn(kKindNames, kind); }
std::optional<ShimFaultKind> shimFaultKindOf(std::string_view name) {
  return valueIn(kKindNames, name);
}
const char* describe(ShimOpcode opcode) { return nameIn(kOpcodeNames, opcode); }
std::optional<ShimOpcode> shimOpcodeOf(std::string_view name) {
  return valueIn(kOpcodeNames, name);
}
const char* describe(ShimQpType type) { return nameIn(kQpTypeNames, type); }
std::optional<ShimQpType> shimQpTypeOf(std::string_view name) {
  return valueIn(kQpTypeNames, name);
}

bool takesStatus(ShimFaultKind kind) { return kind == ShimFaultKind::kCqeError; }
bool takesErrno(ShimFaultKind kind) {
  return kind == ShimFaultKind::kPostSendFail || kind == ShimFaultKind::kPostRecvFail ||
         kind == ShimFaultKind::kRegMrFail;
}
bool takesQpFilters(ShimFaultKind kind) { return kind != ShimFaultKind::kRegMrFail; }

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
  FC_RETURN_IF_ERROR(
      onlyFields(doc, "", {"kind", "filter", "trigger", "status", "errno", "delay_ms"}));
  ShimFault fault;
  auto kind = readChoice(doc, "kind", "kind", kKindNames);
  if (!kind.isOk()) return kind.status();
  fault.kind = *kind;
  if (doc.contains("filter")) FC_RETURN_IF_ERROR(readFilter(doc["filter"], fault));
  if (doc.contains("trigger")) FC_RETURN_IF_ERROR(readTrigger(doc["trigger"], fault.trigger));
  if (doc.contains("status")) {
    if (!takesStatus(fault.kind)) return invalid("status", "is for cqe_error only");
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
    if (!takesErrno(fault.kind)) {
      return invalid("errno", "is for post_send_fail, post_recv_fail and reg_mr_fail only");
    }
    auto error = readChoice(doc, "errno", "errno", kErrnoNames);
    if (!error.isOk()) return error.status();
    fault.error = *error;
  }
  if (doc.contains("delay_ms")) {
    if (fault.kind != ShimFaultKind::kCompletionDelay) {
      return invalid("delay_ms", "is for completion_delay only");
    }
    FC_RETURN_IF_ERROR(readInt(doc, "delay_ms", "", 1, fault.delay_ms));
    if (fault.delay_ms > kMaxDelayMs) {
      return invalid("delay_ms", "must be at most " + std::to_string(kMaxDelayMs));
    }
  }
  return fault;
}

json toJson(const ShimFault& fault) {
  json filter = json::object();
  if (fault.filter.qp_num) filter["qp_num"] = *fault.filter.qp_num;
  if (fault.filter.qp_type) filter["qp_type"] = describe(*fault.filter.qp_type);
  if (fault.filter.opcode) filter["opcode"] = describe(*fault.filter.opcode);
  if (!fault.filter.device.empty()) filter["device"] = fault.filter.device;
  json doc = {{"kind", describe(fault.kind)},
              {"filter", filter},
              {"trigger",
               {{"probability", fault.trigger.probability},
                {"every_nth", fault.trigger.every_nth},
                {"after_ms", fault.trigger.after_ms},
                {"count", fault.trigger.count}}}};
  if (takesStatus(fault.kind)) {
    doc["status"] = wcStatusName(fault.status) != nullptr ? wcStatusName(fault.status) : "";
  }
  if (takesErrno(fault.kind)) doc["errno"] = nameIn(kErrnoNames, fault.error);
  if (fault.kind == ShimFaultKind::kCompletionDelay) doc["delay_ms"] = fault.delay_ms;
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
