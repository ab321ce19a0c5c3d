#pragma once
// `fabric-chaos run` options: parsed and checked here, as a pure function of the arguments, the
// environment and the files they name (both injected), so that every usage error is unit-tested.
// A usage error is kInvalidArgument naming the flag; the caller prints it and exits 2.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::client {

extern const char* const kRunUsage;

enum class TargetKind { kScenario, kFile, kSuite };

struct RunOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string token;  // "" = send none
  TargetKind kind = TargetKind::kScenario;
  std::string name;         // the scenario or suite name; for --file the document's name
  std::string file;         // --file path
  nlohmann::json document;  // --file: the scenario document, sent inline
  std::string fabric;       // "" = the scenario's or the server's default
  nlohmann::json gates = nlohmann::json::object();  // --gate KEY=VALUE, run overrides
  bool wait = false;
  std::string junit_path;
  std::string json_path;
  double timeout_s = 0;  // 0 = no limit
  int poll_ms = 500;
  std::string ca_file;    // https: trusted CAs (PEM); "" = the system store
  bool insecure = false;  // https: accept any certificate (self-signed lab servers)
  bool help = false;
};

struct OptionSources {
  std::function<std::optional<std::string>(const std::string&)> getenv;
  // The whole file, or a Status naming the path.
  std::function<core::Result<std::string>(const std::string&)> readFile;
};

// args: what follows `fabric-chaos run`. Token precedence: --token, --token-file, then
// $FABRIC_CHAOS_TOKEN; server: --server, then $FABRIC_CHAOS_SERVER, then http://127.0.0.1:8080.
core::Result<RunOptions> parseRunOptions(const std::vector<std::string>& args,
                                         const OptionSources& sources);

// "min_score=60" -> {"min_score": 60}; "require_survival=false" -> false. kInvalidArgument.
core::Status parseGate(const std::string& text, nlohmann::json& gates);

// The real sources: std::getenv and the file system.
OptionSources systemOptionSources();

}  // namespace fabric_chaos::client
