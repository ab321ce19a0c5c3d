#include "injectors/ib/sm_failover.h"

#include <signal.h>

#include <algorithm>
#include <cctype>

#include "injectors/ib/ib_simulator.h"
#include "injectors/model/ib_fault_specs.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;

constexpr int kKillWaitMs = 3000;
// OpenSM's clean exit unbinds and flushes its log; one whose simulator is gone takes seconds.
constexpr int kStopWaitMs = 10000;

// "0x0002C9..." and "0x2c9..." are one GUID.
std::string canonicalGuid(std::string guid) {
  std::transform(guid.begin(), guid.end(), guid.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (guid.rfind("0x", 0) == 0) guid = guid.substr(2);
  const size_t first = guid.find_first_not_of('0');
  return first == std::string::npos ? "0" : guid.substr(first);
}

// The GUID an OpenSM command line binds to (-g / --guid), or "".
std::string boundGuid(const std::vector<std::string>& argv) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-g" || argv[i] == "--guid") return argv[i + 1];
  }
  return "";
}

core::Result<SubnetManagerTarget> smTarget(const Fault& fault) {
  const SubnetManagerTarget* sm = std::get_if<SubnetManagerTarget>(&fault.target);
  if (sm == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "sm_failover acts on a subnet_manager, not on target type " +
                      toString(typeOf(fault.target)));
  }
  return *sm;
}

json toJsonArray(const std::vector<std::string>& items) {
  json out = json::array();
  for (const std::string& item : items) out.push_back(item);
  return out;
}

std::vector<std::string> stringsOf(const json& value) {
  std::vector<std::string> out;
  if (!value.is_array()) return out;
  for (const json& item : value) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

const KindSpec& SmFailover::spec() const { return smFailoverSpec(); }

KindInfo SmFailover::info() const {
  return {spec().kind, spec().summary, true, "", "process signals; ibsim console (port_down)"};
}

Status SmFailover::validate(const json& params) const { return checkParams(spec(), params); }

core::Result<std::vector<sys::ProcessInfo>> SmFailover::targetSms(
    const SubnetManagerTarget& target) {
  const std::optional<uint64_t> inode = daemons_->netnsInode(target.netns);
  if (!inode) {
    return Status(StatusCode::kFailedPrecondition,
                  "no network namespace " + target.netns + ": is the IB lab up?");
  }
  std::vector<sys::ProcessInfo> found;
  for (sys::ProcessInfo& process : daemons_->find("opensm")) {
    if (process.netns_inode != inode) continue;
    // In the lab every SM shares the namespace; SIM_HOST says which node it is attached to.
    if (!target.netns.empty() && !target.node.empty() &&
        process.envValue("SIM_HOST").value_or("") != target.node) {
      continue;
    }
    const std::string bound = boundGuid(process.argv);
    if (!target.port_guid.empty() && !bound.empty() &&
        canonicalGuid(bound) != canonicalGuid(target.port_guid)) {
      continue;
    }
    found.push_back(std::move(process));
  }
  return found;
}

core::Result<json> SmFailover::capture(const Fault& fault) {
  auto target = smTarget(fault);
  if (!target.isOk()) return target.status();
  const SmFailoverMode mode = smFailoverModeOf(fault.params);
  auto sms = targetSms(*target);
  if (!sms.isOk()) return sms.status();
  const std::string where = target->netns.empty() ? "" : " in namespace " + target->netns;
  if (sms->empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "no OpenSM runs as the " + describe(fault.target) + where);
  }
  if (sms->size() > 1) {
    return Status(StatusCode::kFailedPrecondition,
                  std::to_string(sms->size()) + " OpenSM processes could be the " +
                      describe(fault.target) + where + "; name it by port_guid (opensm -g)");
  }
  const sys::ProcessInfo& sm = sms->front();
  if (mode == SmFailoverMode::kPortDown) {
    if (target->netns.empty() || target->node.empty()) {
      return Status(StatusCode::kNotSupported,
                    "sm_failover mode port_down needs the IB lab's simulator (a target with a "
                    "namespace and a node); on a real subnet use ib_link_down on the SM's port");
    }
    return json{{"mode", "port_down"}, {"node", target->node}, {"pid", sm.pid}};
  }
  std::string log = daemons_->descriptorTarget(sm.pid, 1);
  if (log.empty() || log.front() != '/' || log == "/dev/null") log.clear();
  return json{{"mode", std::string(toString(mode))},
              {"pid", sm.pid},
              {"argv", toJsonArray(sm.argv)},
              {"env", toJsonArray(sm.env)},
              {"cwd", sm.cwd},
              {"netns", target->netns},
              {"log", log}};
}

Status SmFailover::apply(const Fault& fault) {
  auto target = smTarget(fault);
  if (!target.isOk()) return target.status();
  const SmFailoverMode mode = smFailoverModeOf(fault.params);
  if (mode == SmFailoverMode::kPortDown) {
    return sendSimulatorCommand(*daemons_, target->netns, unlinkCommand(target->node, 1));
  }
  auto sms = targetSms(*target);
  if (!sms.isOk()) return sms.status();
  const bool kill = mode == SmFailoverMode::kKill;
  for (const sys::ProcessInfo& sm : *sms) {
    const Status sent = daemons_->signal(sm.pid, kill ? SIGKILL : SIGTERM);
    if (!sent.isOk() && sent.code() != StatusCode::kNotFound) return sent;
    const int wait_ms = kill ? kKillWaitMs : kStopWaitMs;
    if (!daemons_->waitGone(sm.pid, wait_ms)) {
      return Status(StatusCode::kInternal, "OpenSM (pid " + std::to_string(sm.pid) +
                                               ") still runs " + std::to_string(wait_ms) +
                                               " ms after " + (kill ? "SIGKILL" : "SIGTERM"));
    }
  }
  return Status::ok();
}

Status SmFailover::revert(const Fault& fault, const json& prior) {
  auto target = smTarget(fault);
  if (!target.isOk()) return target.status();
  if (prior.value("mode", "") == "port_down") {
    const Status sent =
        sendSimulatorCommand(*daemons_, target->netns, relinkCommand(target->node, 1));
    // No simulator: the lab is gone, with the cable.
    return sent.code() == StatusCode::kFailedPrecondition ? Status::ok() : sent;
  }
  auto sms = targetSms(*target);
  if (!sms.isOk()) {
    // The lab's namespace is gone: there is no subnet to restart the SM into.
    return sms.status().code() == StatusCode::kFailedPrecondition ? Status::ok() : sms.status();
  }
  if (!sms->empty()) return Status::ok();  // it runs (never stopped, or restarted already)
  sys::DaemonSpec spec;
  spec.argv = stringsOf(prior.value("argv", json::array()));
  spec.env = stringsOf(prior.value("env", json::array()));
  spec.cwd = prior.value("cwd", "");
  spec.netns = prior.value("netns", target->netns);
  spec.log_path = prior.value("log", "");
  if (spec.argv.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "sm_failover's capture has no command line to restart the SM with");
  }
  auto pid = daemons_->start(spec);
  return pid.isOk() ? Status::ok() : pid.status();
}

core::Result<json> SmFailover::observe(const Fault& fault) {
  auto target = smTarget(fault);
  if (!target.isOk()) return target.status();
  auto sms = targetSms(*target);
  if (!sms.isOk()) return sms.status();
  json pids = json::array();
  for (const sys::ProcessInfo& sm : *sms) pids.push_back(sm.pid);
  return json{{"running", !sms->empty()}, {"pids", std::move(pids)}};
}

}  // namespace fabric_chaos::injectors
