#include "lab/lab_common.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_replace.h"
#include "injectors/sys/ecn_marker.h"
#include "lab/ecn_model.h"
#include "lab/port_model.h"

namespace fabric_chaos::lab {

using core::Status;
using core::StatusCode;

namespace {

// One iproute2 tool (ip, tc) with its stderr mapped to a Status.
Status runIproute2(sys::CommandRunner& runner, const std::string& tool,
                   const std::vector<std::string>& args, IpErrorRules rules) {
  std::vector<std::string> argv{tool};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = runner.run(argv);
  if (!result.isOk()) return result.status();
  if (result->exit_code != 0) {
    std::string err = result->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ' || err.back() == '\r')) {
      err.pop_back();
    }
    StatusCode code = StatusCode::kInternal;
    for (const IpErrorRule& rule : rules) {
      if (err.find(rule.needle) != std::string::npos) {
        code = rule.code;
        break;
      }
    }
    return Status(code, "`" + sys::joinArgv(argv) + "` failed: " + err, result->exit_code);
  }
  return Status::ok();
}

}  // namespace

Status runIp(sys::CommandRunner& runner, const std::vector<std::string>& args, IpErrorRules rules) {
  return runIproute2(runner, "ip", args, rules);
}

Status runTc(sys::CommandRunner& runner, const std::vector<std::string>& args, IpErrorRules rules) {
  return runIproute2(runner, "tc", args, rules);
}

core::Result<std::vector<std::string>> namespacesWithPrefix(sys::CommandRunner& runner,
                                                            const std::string& prefix) {
  auto result = runner.run({"ip", "netns", "list"});
  if (!result.isOk()) return result.status();
  std::vector<std::string> names;
  std::istringstream lines(result->out);
  std::string line;
  while (std::getline(lines, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

Status addSwitchNamespace(sys::CommandRunner& runner, const std::string& sw, IpErrorRules rules) {
  if (Status s = runIp(runner, {"netns", "add", sw}, rules); !s.isOk()) {
    if (s.code() == StatusCode::kPermissionDenied) {
      return Status(StatusCode::kPermissionDenied,
                    "cannot create network namespaces here (" + s.message() + ")");
    }
    return s;
  }
  return Status::ok();
}

std::vector<std::vector<std::string>> switchBridgeCommands(const std::string& sw) {
  return {{"-n", sw, "link", "set", "lo", "up"},
          {"-n", sw, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0",
           "mcast_snooping", "0"},
          {"-n", sw, "link", "set", "br0", "up"}};
}

Status addSwitchBridge(sys::CommandRunner& runner, const std::string& sw, IpErrorRules rules) {
  for (const auto& command : switchBridgeCommands(sw)) {
    FC_RETURN_IF_ERROR(runIp(runner, command, rules));
  }
  return Status::ok();
}

bool isOnPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string readTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trimRight(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  return text;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  return text;
}

std::string fabricFilePath(const std::string& state_dir, const std::string& name) {
  return state_dir + "/fabrics/" + name + ".json";
}

std::optional<nlohmann::json> readFabricFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

std::optional<std::vector<std::string>> namespacesInFabricFile(const std::string& path) {
  const std::optional<nlohmann::json> doc = readFabricFile(path);
  if (!doc) return std::nullopt;
  auto fabric = scenarios::fabricFromJson(*doc);
  if (!fabric.isOk()) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& sw : fabric->switches) names.push_back(sw.netns);
  for (const auto& host : fabric->hosts) names.push_back(host.netns);
  return names;
}

int hostsInFabricFile(const std::string& path, int fallback) {
  if (std::ifstream in(path); in) {
    auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_discarded() && doc.contains("hosts") && doc["hosts"].is_array()) {
      return static_cast<int>(doc["hosts"].size());
    }
  }
  return fallback;
}

Status writeFabricFile(const std::string& state_dir, const std::string& name,
                       const scenarios::Fabric& fabric) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir + "/fabrics", ec);
  if (ec) {
    return Status(StatusCode::kInternal,
                  "cannot create " + state_dir + "/fabrics: " + ec.message());
  }
  return core::replaceFileContents(fabricFilePath(state_dir, name),
                                   scenarios::toJson(fabric).dump(2) + "\n");
}

core::Result<int> modelEverySwitchPort(sys::CommandRunner& runner, const scenarios::Fabric& fabric,
                                       const scenarios::EgressModel& egress, IpErrorRules rules) {
  int ports = 0;
  for (const auto& sw : fabric.switches) {
    for (const auto& port : sw.ports) {
      for (const auto& command : egressCommands(sw.netns, port, egress)) {
        FC_RETURN_IF_ERROR(runTc(runner, command, rules));
      }
      if (egress.ecn) {
        FC_RETURN_IF_ERROR(sys::attachEcnMarker(sw.netns, port, ecnMarkerConfig(egress)));
      }
      ++ports;
    }
  }
  return ports;
}

}  // namespace fabric_chaos::lab
