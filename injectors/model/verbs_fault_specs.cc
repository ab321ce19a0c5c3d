#include "injectors/model/verbs_fault_specs.h"

#include <cerrno>
#include <utility>
#include <vector>

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;
using verbs_shim::ShimFault;
using verbs_shim::ShimFaultKind;
using verbs_shim::ShimOpcode;
using verbs_shim::ShimQpType;

// Kept equal to the shim's own limits (verbs_shim/plan.cc): a QP number is 24 bits, a held
// completion waits at most ten minutes.
constexpr double kMaxQpNum = 16777215;
constexpr double kMaxDelayMs = 600000;
constexpr double kMaxAfterMs = 86400000;  // a day

// The errnos the shim returns (verbs_shim/plan.cc keeps its own copy; shimFaultOf's round trip
// through the shim's codec would refuse a name that drifted).
constexpr std::array<std::pair<int, const char*>, 4> kErrnoNames = {{
    {ENOMEM, "ENOMEM"},
    {EAGAIN, "EAGAIN"},
    {EINVAL, "EINVAL"},
    {EFAULT, "EFAULT"},
}};

Status invalid(const std::string& param, const std::string& problem) {
  return Status(StatusCode::kInvalidArgument, param + ": " + problem);
}

ParamSpec choice(std::string name, std::vector<std::string> choices, json default_value,
                 std::string doc) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::kChoice;
  p.choices = std::move(choices);
  p.default_value = std::move(default_value);
  p.doc = std::move(doc);
  return p;
}

ParamSpec integer(std::string name, std::string unit, std::optional<double> min,
                  std::optional<double> max, json default_value, std::string doc) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = ParamType::kInteger;
  p.unit = std::move(unit);
  p.min = min;
  p.max = max;
  p.default_value = std::move(default_value);
  p.doc = std::move(doc);
  return p;
}

// Every error status of enum ibv_wc_status by the shim's names: success is no fault.
std::vector<std::string> errorStatusNames() {
  std::vector<std::string> names;
  for (int status = 1; verbs_shim::wcStatusName(status) != nullptr; ++status) {
    names.emplace_back(verbs_shim::wcStatusName(status));
  }
  return names;
}

ParamSpec errnoParam(const std::string& doc) {
  std::vector<std::string> names;
  for (const auto& [value, name] : kErrnoNames) names.emplace_back(name);
  return choice("errno", std::move(names), "ENOMEM", doc);
}

// Which QPs' events a fault sees. Not for registrations, which belong to no QP.
std::vector<ParamSpec> qpFilterParams() {
  return {
      integer("qp_num", "", 0, kMaxQpNum, nullptr,
              "only this QP's events (the QPN perftest and ibv_rc_pingpong print in hex, given "
              "here in decimal); absent: every QP of the process"),
      choice("qp_type", {"rc", "uc", "ud"}, nullptr,
             "only QPs of this transport: rc (NCCL, most MPI traffic), uc, ud (datagram QPs, "
             "such as UCX's ud transports); absent: any"),
      choice("opcode", {"send", "rdma_write", "rdma_read", "atomic", "recv"}, nullptr,
             "only these work requests or completions: send, rdma_write (NCCL's bulk data), "
             "rdma_read, atomic, recv (receives, including those a WRITE with immediate "
             "consumes); absent: any"),
  };
}

// How often the armed fault fires among the events its filters let through.
std::vector<ParamSpec> triggerParams() {
  return {
      {"probability",
       ParamType::kNumber,
       "",
       0,
       false,
       1,
       {},
       false,
       1,
       "chance that a matching event (after every_nth and after_ms) is injected; 0.001 gives a "
       "rare, hard-to-reproduce failure"},
      integer("every_nth", "", 1, std::nullopt, 1,
              "only every Nth matching event is a candidate: a steady, periodic failure"),
      integer("after_ms", "ms", 0, kMaxAfterMs, 0,
              "nothing is injected until this long after arming: the job is past its bootstrap "
              "and in steady state"),
      integer("count", "", 1, std::nullopt, nullptr,
              "at most this many injections per process (1: a single error); absent: no limit "
              "while armed"),
  };
}

KindSpec baseSpec(std::string kind, std::string summary) {
  KindSpec s;
  s.kind = std::move(kind);
  s.summary = std::move(summary);
  s.target = TargetType::kProcess;
  // The shim holds one set of armed faults per process and an arm replaces it.
  s.resource = "verbs_shim";
  s.composition = Composition::kExclusive;
  s.lifecycle = Lifecycle::kInstant;
  s.phases = {PhaseShape::kOneWindow, "", "", ""};
  return s;
}

// `own` (the kind's knobs), then the QP filters when the kind sees QPs, then the trigger.
KindSpec withParams(KindSpec s, std::vector<ParamSpec> own, bool qp_filters) {
  s.params = std::move(own);
  if (qp_filters) {
    for (ParamSpec& p : qpFilterParams()) s.params.push_back(std::move(p));
  }
  for (ParamSpec& p : triggerParams()) s.params.push_back(std::move(p));
  return s;
}

const KindSpec& cqeErrorSpec() {
  static const KindSpec spec = withParams(
      baseSpec("verbs_cqe_error",
               "Turns successful work completions of a running RDMA program into errors "
               "(retry_exc_err by default), the QP then in error: what NCCL or MPI see when a "
               "path fails long enough to exhaust the transport's retries, or a peer's memory "
               "key goes bad."),
      {choice("status", errorStatusNames(), "retry_exc_err",
              "the completion's status, ibv_wc_status without IBV_WC_: retry_exc_err (NCCL's "
              "status=12, retries exhausted), rnr_retry_exc_err (receiver not ready), "
              "rem_access_err (bad rkey), wr_flush_err, ...")},
      true);
  return spec;
}

const KindSpec& qpErrorSpec() {
  static const KindSpec spec = withParams(
      baseSpec("verbs_qp_error",
               "Moves a running program's QP to the error state on a matching post or "
               "completion: a NIC firmware hiccup or a fatal async QP event; its outstanding "
               "work flushes with wr_flush_err and the program must tear the connection down."),
      {}, true);
  return spec;
}

const KindSpec& postFailSpec() {
  static const KindSpec spec = withParams(
      baseSpec("verbs_post_fail",
               "Makes ibv_post_send or ibv_post_recv fail with an errno, the work request not "
               "posted: a send or receive queue overrun, or a driver refusing work under memory "
               "pressure."),
      {choice("op", {"send", "recv"}, "send",
              "which call fails: ibv_post_send (send, also RDMA write/read and atomics) or "
              "ibv_post_recv (recv)"),
       errnoParam("what the call returns: ENOMEM (queue full, the usual one), EAGAIN, EINVAL "
                  "(a request the provider refuses) or EFAULT")},
      true);
  return spec;
}

const KindSpec& completionDelaySpec() {
  static const KindSpec spec = withParams(
      baseSpec("verbs_completion_delay",
               "Holds back a CQ's completions for delay_ms before ibv_poll_cq sees them: a "
               "stalled NIC, PCIe back-pressure or a congested path, seen by the job as a "
               "collective that stalls without any error."),
      {integer("delay_ms", "ms", 1, kMaxDelayMs, 1000,
               "how long each held completion waits before the program can poll it")},
      true);
  return spec;
}

const KindSpec& regMrFailSpec() {
  static const KindSpec spec = withParams(
      baseSpec("verbs_reg_mr_fail",
               "Makes memory registration (ibv_reg_mr and its iova forms) fail with an errno: "
               "pinned-memory exhaustion (RLIMIT_MEMLOCK, the NIC's translation tables) when a "
               "job grows or re-registers its buffers."),
      {errnoParam("what ibv_reg_mr fails with: ENOMEM (the memlock limit or the NIC's "
                  "translation tables exhausted, the usual one), EAGAIN, EINVAL or EFAULT (a "
                  "buffer that cannot be pinned)")},
      false);
  return spec;
}

int errnoOf(const std::string& name) {
  for (const auto& [value, known] : kErrnoNames) {
    if (name == known) return value;
  }
  return ENOMEM;
}

// An opcode filter that no event of the fault could ever match: refused rather than armed to
// do nothing.
Status checkOpcode(VerbsFaultKind kind, const json& params) {
  auto opcode_it = params.find("opcode");
  if (opcode_it == params.end()) return Status::ok();
  const std::string opcode = opcode_it->get<std::string>();
  if (kind == VerbsFaultKind::kPostFail) {
    const std::string op = params.value("op", "send");
    if (op == "send" && opcode == "recv") {
      return unacceptableParam(
          "opcode",
          "ibv_post_send never posts receives: with op send, use send, rdma_write, "
          "rdma_read or atomic (or op recv)");
    }
    if (op == "recv" && opcode != "recv") {
      return unacceptableParam("opcode",
                               "ibv_post_recv posts receives only: with op recv, use recv");
    }
  }
  const std::string qp_type = params.value("qp_type", "");
  if (qp_type == "ud" && opcode != "send" && opcode != "recv") {
    return unacceptableParam("opcode", "ud QPs carry sends and receives only, never " + opcode);
  }
  if (qp_type == "uc" && (opcode == "rdma_read" || opcode == "atomic")) {
    return unacceptableParam("opcode", "uc QPs have no " + opcode + " (RC only)");
  }
  return Status::ok();
}

ShimFaultKind shimKindOf(VerbsFaultKind kind, const json& params) {
  switch (kind) {
    case VerbsFaultKind::kCqeError:
      return ShimFaultKind::kCqeError;
    case VerbsFaultKind::kQpError:
      return ShimFaultKind::kQpError;
    case VerbsFaultKind::kPostFail:
      return params.value("op", "send") == "recv" ? ShimFaultKind::kPostRecvFail
                                                  : ShimFaultKind::kPostSendFail;
    case VerbsFaultKind::kCompletionDelay:
      return ShimFaultKind::kCompletionDelay;
    case VerbsFaultKind::kRegMrFail:
      return ShimFaultKind::kRegMrFail;
  }
  return ShimFaultKind::kCqeError;
}

}  // namespace

const KindSpec& verbsFaultSpec(VerbsFaultKind kind) {
  switch (kind) {
    case VerbsFaultKind::kCqeError:
      return cqeErrorSpec();
    case VerbsFaultKind::kQpError:
      return qpErrorSpec();
    case VerbsFaultKind::kPostFail:
      return postFailSpec();
    case VerbsFaultKind::kCompletionDelay:
      return completionDelaySpec();
    case VerbsFaultKind::kRegMrFail:
      return regMrFailSpec();
  }
  return cqeErrorSpec();
}

std::optional<VerbsFaultKind> verbsFaultKindOf(std::string_view kind) {
  for (VerbsFaultKind candidate : kVerbsFaultKinds) {
    if (verbsFaultSpec(candidate).kind == kind) return candidate;
  }
  return std::nullopt;
}

core::Result<ShimFault> shimFaultOf(const std::string& kind, const json& params) {
  const std::optional<VerbsFaultKind> verbs = verbsFaultKindOf(kind);
  if (!verbs) return invalid("kind", kind + " is not a verbs shim kind");
  const KindSpec& spec = verbsFaultSpec(*verbs);
  // Checked again here, so that reading the values below cannot throw whatever the caller did.
  FC_RETURN_IF_ERROR(checkParams(spec, params));
  const json p = withDefaults(spec, params);
  FC_RETURN_IF_ERROR(checkOpcode(*verbs, p));

  ShimFault fault;
  fault.kind = shimKindOf(*verbs, p);
  if (verbs_shim::takesStatus(fault.kind)) {
    fault.status = verbs_shim::wcStatusOf(p["status"].get<std::string>()).value_or(fault.status);
  }
  if (verbs_shim::takesErrno(fault.kind)) fault.error = errnoOf(p["errno"].get<std::string>());
  if (fault.kind == ShimFaultKind::kCompletionDelay) fault.delay_ms = p["delay_ms"].get<int64_t>();
  if (p.contains("qp_num")) fault.filter.qp_num = p["qp_num"].get<uint32_t>();
  if (p.contains("qp_type"))
    fault.filter.qp_type = verbs_shim::shimQpTypeOf(p["qp_type"].get<std::string>());
  if (p.contains("opcode"))
    fault.filter.opcode = verbs_shim::shimOpcodeOf(p["opcode"].get<std::string>());
  fault.trigger.probability = p["probability"].get<double>();
  fault.trigger.every_nth = p["every_nth"].get<int64_t>();
  fault.trigger.after_ms = p["after_ms"].get<int64_t>();
  fault.trigger.count = p.contains("count") ? p["count"].get<int64_t>() : -1;

  // The shim reads what the agent sends with its own rules: a fault it would refuse is refused
  // here, before any process is touched.
  auto wire = verbs_shim::shimFaultFromJson(verbs_shim::toJson(fault));
  if (!wire.isOk()) {
    return Status(StatusCode::kUnprocessable,
                  spec.kind + ": the verbs shim would refuse it (" + wire.status().message() + ")");
  }
  return fault;
}

}  // namespace fabric_chaos::injectors
