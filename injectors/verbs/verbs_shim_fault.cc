#include "injectors/verbs/verbs_shim_fault.h"

#include <algorithm>

namespace fabric_chaos::injectors {

using core::Status;
using core::StatusCode;

namespace {

// "1234 ib_write_bw rank 3", "1240 python"
std::string describeProcess(const sys::ShimProcess& process) {
  std::string out = std::to_string(process.pid) + " " + process.comm;
  if (process.rank) out += " rank " + std::to_string(*process.rank);
  return out;
}

std::vector<pid_t> pidsOf(const json& prior) {
  std::vector<pid_t> pids;
  auto list = prior.is_object() ? prior.find("pids") : prior.end();
  if (list == prior.end() || !list->is_array()) return pids;
  for (const json& pid : *list) {
    if (pid.is_number_integer() && pid.get<int64_t>() > 0) pids.push_back(pid.get<pid_t>());
  }
  return pids;
}

}  // namespace

uint64_t shimSeedOf(const std::string& fault_key) {
  // FNV-1a: stable across builds and hosts, unlike std::hash.
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : fault_key) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash >> 1;
}

bool targetMatches(const ProcessTarget& target, const sys::ShimProcess& process) {
  if (target.pid) return process.pid == *target.pid;
  if (target.rank) return process.rank == target.rank;
  if (!target.name.empty()) return process.comm == target.name;
  return true;
}

const KindSpec& VerbsShimFault::spec() const { return verbsFaultSpec(kind_); }

KindInfo VerbsShimFault::info() const {
  if (channel_ == nullptr) {
    return {spec().kind, spec().summary, false, "no verbs shim channel in this agent", ""};
  }
  return {spec().kind, spec().summary, true, "",
          "verbs shim (LD_PRELOAD, control socket " + channel_->directory() + ")"};
}

Status VerbsShimFault::validate(const json& params) const {
  FC_RETURN_IF_ERROR(checkParams(spec(), params));
  return shimFaultOf(spec().kind, params).status();
}

Status VerbsShimFault::usable() const {
  if (channel_ == nullptr || leases_ == nullptr) {
    return Status(StatusCode::kNotSupported,
                  spec().kind +
                      " arms the verbs shim of running programs, which this agent was "
                      "not given a channel to");
  }
  return Status::ok();
}

core::Result<ProcessTarget> VerbsShimFault::targetOf(const Fault& fault) const {
  const ProcessTarget* process = std::get_if<ProcessTarget>(&fault.target);
  if (process == nullptr) {
    return Status(
        StatusCode::kInvalidArgument,
        spec().kind + " acts on a process, not on target type " + toString(typeOf(fault.target)));
  }
  FC_RETURN_IF_ERROR(usable());
  return *process;
}

core::Result<std::vector<sys::ShimProcess>> VerbsShimFault::matching(const ProcessTarget& target) {
  auto all = channel_->list();
  if (!all.isOk()) return all.status();
  std::vector<sys::ShimProcess> found;
  for (const sys::ShimProcess& process : *all) {
    if (targetMatches(target, process)) found.push_back(process);
  }
  if (!found.empty()) return found;
  std::string what = isEveryProcess(target)
                         ? "no shim-loaded process runs here"
                         : "no shim-loaded process matches " + describe(Target(target));
  if (all->empty()) {
    what +=
        " (none here: start the program with LD_PRELOAD=libfabric-chaos-verbs.so and "
        "FABRIC_CHAOS_VERBS_DIR=" +
        channel_->directory() + ")";
  } else {
    what += " (" + std::to_string(all->size()) + " shim-loaded process" +
            (all->size() == 1 ? "" : "es") + " here: ";
    for (size_t i = 0; i < all->size(); ++i) {
      what += (i == 0 ? "" : ", ") + describeProcess((*all)[i]);
    }
    what += ")";
  }
  return Status(StatusCode::kFailedPrecondition, what);
}

core::Result<json> VerbsShimFault::capture(const Fault& fault) {
  auto target = targetOf(fault);
  if (!target.isOk()) return target.status();
  auto found = matching(*target);
  if (!found.isOk()) return found.status();
  json pids = json::array();
  for (const sys::ShimProcess& process : *found) pids.push_back(process.pid);
  return json{{"pids", pids}};
}

Status VerbsShimFault::apply(const Fault& fault) {
  auto target = targetOf(fault);
  if (!target.isOk()) return target.status();
  auto shim_fault = shimFaultOf(spec().kind, fault.params);
  if (!shim_fault.isOk()) return shim_fault.status();
  auto found = matching(*target);
  if (!found.isOk()) return found.status();
  const std::string key = faultKey(fault);
  // Refused before anything is armed: an arm would replace the other fault's, and its revert
  // would then disarm ours.
  for (const sys::ShimProcess& process : *found) {
    const std::optional<std::string> holder = leases_->holderOf(process.pid);
    if (holder && *holder != key) {
      return Status(StatusCode::kFailedPrecondition,
                    "process " + describeProcess(process) + " is armed by another verbs fault (" +
                        *holder + "); its shim holds one fault at a time");
    }
  }
  const verbs_shim::ArmRequest request{{*shim_fault}, kLeaseMs, shimSeedOf(key)};
  std::vector<pid_t> armed;
  for (const sys::ShimProcess& process : *found) {
    const Status status = channel_->arm(process.pid, request);
    if (!status.isOk()) {
      // All or nothing: a job half of whose ranks fail is not the fault that was asked for.
      // Best effort: one that does not answer loses its lease within kLeaseMs anyway.
      for (pid_t pid : armed) channel_->disarm(pid);
      return Status(status.code(),
                    spec().kind + ": " + status.message() +
                        (armed.empty() ? ""
                                       : "; the " + std::to_string(armed.size()) +
                                             " process(es) already armed were disarmed"),
                    status.origin());
    }
    armed.push_back(process.pid);
  }
  leases_->hold(key, armed);
  return Status::ok();
}

Status VerbsShimFault::revert(const Fault& fault, const json& prior) {
  auto target = targetOf(fault);
  if (!target.isOk()) return target.status();
  // The apply's processes too: one may have started between capture and apply.
  std::vector<pid_t> pids = leases_->release(faultKey(fault));
  for (pid_t pid : pidsOf(prior)) {
    if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  }
  Status first_error;
  for (pid_t pid : pids) {
    const Status status = channel_->disarm(pid);
    // Exited: its faults went with it. A failure otherwise is reported (the engine retries);
    // without renewals its lease runs out within kLeaseMs anyway.
    if (status.isOk() || status.code() == StatusCode::kNotFound) continue;
    if (first_error.isOk()) first_error = status;
  }
  return first_error;
}

core::Result<json> VerbsShimFault::observe(const Fault& fault) {
  auto target = targetOf(fault);
  if (!target.isOk()) return target.status();
  const std::vector<pid_t> held = leases_->held(faultKey(fault));
  auto all = channel_->list();
  if (!all.isOk()) return all.status();
  json processes = json::array();
  for (const sys::ShimProcess& process : *all) {
    if (std::find(held.begin(), held.end(), process.pid) == held.end()) continue;
    processes.push_back({{"pid", process.pid},
                         {"comm", process.comm},
                         {"rank", process.rank ? json(*process.rank) : json(nullptr)},
                         {"armed", process.armed}});
  }
  return json{{"processes", processes}};
}

}  // namespace fabric_chaos::injectors
