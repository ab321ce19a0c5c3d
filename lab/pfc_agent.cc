#include "lab/pfc_agent.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "injectors/model/pfc_watchdog_config.h"
#include "injectors/sys/process.h"

namespace fabric_chaos::lab {

using core::Status;
using core::StatusCode;

std::string pfcStatsFile(const std::string& state_dir, const std::string& switch_netns) {
  return (std::filesystem::path(state_dir) / "pfc" / (switch_netns + ".json")).string();
}

std::string pfcSettingsFile(const std::string& state_dir, const std::string& switch_netns) {
  return (std::filesystem::path(state_dir) / "pfc" / (switch_netns + ".settings.json")).string();
}

namespace {

std::string losslessDscpList(const scenarios::EgressModel& egress) {
  std::string dscp;
  for (int d : egress.lossless_dscp) dscp += (dscp.empty() ? "" : ",") + std::to_string(d);
  return dscp;
}

}  // namespace

std::string describePfc(const scenarios::EgressModel& egress, const std::string& stats_file) {
  return "PFC on every switch port: the lossless class (DSCP " + losslessDscpList(egress) +
         ") is priority " + std::to_string(egress.pfc->priority) +
         "; a port pauses it on the 802.1Qbb frames it receives (counters in " + stats_file + ")";
}

std::vector<std::string> pfcAgentCommand(const std::string& binary, const scenarios::Switch& sw,
                                         const std::string& state_dir) {
  const scenarios::EgressModel& egress = *sw.egress;
  std::string ports;
  for (const std::string& port : sw.ports) ports += (ports.empty() ? "" : ",") + port;
  std::vector<std::string> argv = {
      "ip",
      "netns",
      "exec",
      sw.netns,
      binary,
      "pfc-switch",
      "--ports",
      ports,
      "--rate-bps",
      std::to_string(egress.rate_bps),
      "--buffer-bytes",
      std::to_string(egress.buffer_bytes),
      "--lossless-dscp",
      losslessDscpList(egress),
      "--lossless-priority",
      std::to_string(egress.pfc->priority),
      "--stats",
      pfcStatsFile(state_dir, sw.netns),
      "--settings",
      pfcSettingsFile(state_dir, sw.netns),
      "--netns-file",
      "/run/netns/" + sw.netns,
      "--daemon",
      "--log",
      (std::filesystem::path(state_dir) / "pfc" / (sw.netns + ".log")).string()};
  if (const auto& watchdog = egress.pfc->watchdog) {
    argv.insert(argv.end(), {"--watchdog", injectors::formatPfcWatchdog(*watchdog)});
  }
  return argv;
}

Status startPfcAgent(sys::CommandRunner& runner, const std::string& binary,
                     const scenarios::Switch& sw, const std::string& state_dir) {
  if (!sw.egress || !sw.egress->pfc) {
    return Status(StatusCode::kFailedPrecondition,
                  "switch " + sw.name + " does not model PFC (lab up --pfc)");
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(state_dir) / "pfc", ec);
  const std::vector<std::string> command = pfcAgentCommand(binary, sw, state_dir);
  auto result = runner.run(command, 30000);
  if (!result.isOk()) return result.status();
  if (result->exit_code != 0) {
    std::string why = result->err.empty() ? result->out : result->err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return Status(StatusCode::kInternal, "the PFC agent of switch " + sw.name +
                                             " did not start (exit " +
                                             std::to_string(result->exit_code) + "): " + why);
  }
  return Status::ok();
}

namespace {

std::vector<int> pidsIn(const std::string& out) {
  std::vector<int> pids;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    int pid = 0;
    if (std::from_chars(line.data(), line.data() + line.size(), pid).ec == std::errc() && pid > 0) {
      pids.push_back(pid);
    }
  }
  return pids;
}

}  // namespace

core::Result<bool> pfcAgentRunning(sys::CommandRunner& runner, const std::string& netns) {
  auto pids = runner.run({"ip", "netns", "pids", netns});
  if (!pids.isOk()) return pids.status();
  for (int pid : pidsIn(pids->out)) {
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find(std::string("pfc-switch\0", 11)) != std::string::npos) return true;
  }
  return false;
}

Status stopProcessesInNetns(sys::CommandRunner& runner, const std::string& netns,
                            const std::function<void(const std::string&)>& progress) {
  auto pids = runner.run({"ip", "netns", "pids", netns});
  if (!pids.isOk()) return pids.status();
  for (int pid : pidsIn(pids->out)) {
    // The routing daemons, a PFC agent, and anything else left running inside the lab.
    progress("stopping process " + std::to_string(pid) + " in " + netns);
    if (!sys::terminateProcess(pid, 2000)) {
      return Status(StatusCode::kInternal,
                    "process " + std::to_string(pid) + " in " + netns + " did not exit");
    }
  }
  return Status::ok();
}

}  // namespace fabric_chaos::lab
