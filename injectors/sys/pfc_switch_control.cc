#include "injectors/sys/pfc_switch_control.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "core/file_replace.h"
#include "core/unique_fd.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;
using injectors::PfcPortSettings;

struct AgentProcess {
  pid_t pid = 0;
  std::string settings_path;
  std::string stats_path;
};

std::vector<std::string> commandLineOf(pid_t pid) {
  auto text = core::readWholeFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> argv;
  if (!text.isOk()) return argv;
  size_t start = 0;
  while (start < text->size()) {
    const size_t end = text->find('\0', start);
    argv.push_back(text->substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return argv;
}

std::string flagValue(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] == flag) return argv[i + 1];
  }
  return "";
}

// The pfc-switch process whose network namespace is /run/netns/<netns> ("" = ours).
core::Result<AgentProcess> findAgent(const std::string& netns) {
  const std::string ns_path = netns.empty() ? "/proc/self/ns/net" : "/run/netns/" + netns;
  struct stat want {};
  if (::stat(ns_path.c_str(), &want) != 0) {
    return Status(StatusCode::kNotFound, "no network namespace " + netns);
  }
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return core::errnoStatus(errno, "cannot list /proc");
  std::optional<AgentProcess> found;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    struct stat ns {};
    if (::stat(("/proc/" + std::string(entry->d_name) + "/ns/net").c_str(), &ns) != 0) continue;
    if (ns.st_ino != want.st_ino || ns.st_dev != want.st_dev) continue;
    const std::vector<std::string> argv = commandLineOf(static_cast<pid_t>(pid));
    if (argv.size() < 2 || argv[1] != "pfc-switch") continue;
    // `--daemon` leaves a parent that waits for its child's word: take the one with the files.
    found = AgentProcess{static_cast<pid_t>(pid), flagValue(argv, "--settings"),
                         flagValue(argv, "--stats")};
    if (!found->settings_path.empty()) break;
  }
  ::closedir(proc);
  const std::string where = netns.empty() ? "this namespace" : "namespace " + netns;
  if (!found) {
    return Status(StatusCode::kNotFound,
                  "no PFC agent runs in " + where + " (lab up --pfc starts one per switch)");
  }
  if (found->settings_path.empty() || found->stats_path.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "the PFC agent in " + where + " (pid " + std::to_string(found->pid) +
                      ") runs without --settings and --stats: bring the lab up again");
  }
  return *found;
}

core::Result<nlohmann::json> readJson(const std::string& path) {
  auto text = core::readWholeFile(path);
  if (!text.isOk()) return text.status();
  auto doc = nlohmann::json::parse(*text, nullptr, false);
  if (doc.is_discarded()) return Status(StatusCode::kInternal, path + " is not JSON");
  return doc;
}

class ProcessPfcSwitchControl : public PfcSwitchControl {
 public:
  explicit ProcessPfcSwitchControl(int ack_timeout_ms) : ack_timeout_ms_(ack_timeout_ms) {}

  core::Result<PfcPortSettings> read(const std::string& netns, const std::string& port) override {
    auto agent = findAgent(netns);
    if (!agent.isOk()) return agent.status();
    auto settings = injectors::readPfcSwitchSettings(agent->settings_path);
    if (!settings.isOk()) return settings.status();
    auto it = settings->ports.find(port);
    if (it == settings->ports.end()) return noSuchPort(netns, port);
    return it->second;
  }

  Status setPfcEnabled(const std::string& netns, const std::string& port, uint8_t mask) override {
    return update(netns, port, [&](PfcPortSettings& settings) { settings.pfc_enabled = mask; });
  }

  Status setWatchdog(const std::string& netns, const std::string& port,
                     const std::optional<injectors::PfcWatchdogConfig>& watchdog) override {
    return update(netns, port, [&](PfcPortSettings& settings) { settings.watchdog = watchdog; });
  }

 private:
  Status update(const std::string& netns, const std::string& port,
                const std::function<void(PfcPortSettings&)>& change) {
    auto agent = findAgent(netns);
    if (!agent.isOk()) return agent.status();
    // One writer at a time per switch: two faults on two ports of it read, change and write the
    // same file.
    const std::string lock_path = agent->settings_path + ".lock";
    core::UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (lock.get() < 0) return core::errnoStatus(errno, "cannot open " + lock_path);
    if (::flock(lock.get(), LOCK_EX) != 0) return core::errnoStatus(errno, "flock " + lock_path);
    auto settings = injectors::readPfcSwitchSettings(agent->settings_path);
    if (!settings.isOk()) return settings.status();
    auto it = settings->ports.find(port);
    if (it == settings->ports.end()) return noSuchPort(netns, port);
    change(it->second);
    ++settings->generation;
    FC_RETURN_IF_ERROR(core::replaceFileContents(agent->settings_path,
                                                 injectors::toJson(*settings).dump(2) + "\n"));
    const int64_t reads_before = settingsReads(*agent);
    if (::kill(agent->pid, SIGHUP) != 0) {
      return core::errnoStatus(
          errno, "cannot signal the PFC agent (pid " + std::to_string(agent->pid) + ")");
    }
    return awaitGeneration(*agent, reads_before, settings->generation);
  }

  static Status noSuchPort(const std::string& netns, const std::string& port) {
    return Status(StatusCode::kNotFound,
                  "the PFC agent in namespace " + netns + " has no port " + port);
  }

  static int64_t settingsReads(const AgentProcess& agent) {
    auto stats = readJson(agent.stats_path);
    return stats.isOk() ? stats->value("settings_reads", int64_t{0}) : 0;
  }

  // Waits for the agent to read the file again (its count of reads passes `reads_before`), then
  // checks what it made of it: the generation in force, or its reason for refusing the file.
  Status awaitGeneration(const AgentProcess& agent, int64_t reads_before,
                         int64_t generation) const {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(ack_timeout_ms_);
    while (std::chrono::steady_clock::now() < deadline) {
      auto stats = readJson(agent.stats_path);
      if (stats.isOk() && stats->value("settings_reads", int64_t{0}) > reads_before) {
        if (stats->value("settings_generation", int64_t{-1}) >= generation) return Status::ok();
        const std::string error = stats->value("settings_error", std::string());
        return Status(StatusCode::kInvalidArgument,
                      "the PFC agent refused settings generation " + std::to_string(generation) +
                          ": " + (error.empty() ? "it kept an older one" : error));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return Status(StatusCode::kTimeout, "the PFC agent (pid " + std::to_string(agent.pid) +
                                            ") did not apply settings " + "generation " +
                                            std::to_string(generation) + " within " +
                                            std::to_string(ack_timeout_ms_) + " ms");
  }

  int ack_timeout_ms_;
};

}  // namespace

std::unique_ptr<PfcSwitchControl> makeProcessPfcSwitchControl(int ack_timeout_ms) {
  return std::make_unique<ProcessPfcSwitchControl>(ack_timeout_ms);
}

}  // namespace fabric_chaos::sys
