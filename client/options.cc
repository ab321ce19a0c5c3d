#include "client/options.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "core/command_line.h"
#include "core/text.h"

namespace fabric_chaos::client {

using core::Status;
using core::StatusCode;
using nlohmann::json;

const char* const kRunUsage =
    R"(Usage: fabric-chaos run (--scenario NAME | --file F | --suite NAME) [options]

Starts a run (or a suite run) on a fabric-chaos server and, with --wait, follows it to its end,
prints a verdict per run and exits with the verdict: 0 every gate passed, 1 a run failed a gate,
2 error, aborted, interrupted, timeout, bad usage, server unreachable or refused (401/403).

What to run (exactly one):
  --scenario NAME     a scenario stored on the server (GET /v1/scenarios)
  --file F            a scenario document (JSON) sent inline
  --suite NAME        a suite: its scenarios run one after the other

Options:
  --server URL        the server (default $FABRIC_CHAOS_SERVER, else http://127.0.0.1:8080)
  --token T           bearer token (role operator or admin); or --token-file PATH, or
  --token-file PATH   $FABRIC_CHAOS_TOKEN. The token is never printed.
  --fabric F          run on this fabric instead of the scenario's or the server's default
  --gate KEY=VALUE    override a gate, repeatable: min_score=60, max_recovery_ms=2000,
                      min_retained=0.5, max_p99_slowdown=3, max_sm_takeover_ms=5000,
                      max_reroute_ms=500, require_survival=true
                      (not with --suite)
  --wait              follow the run(s) to the end; without it print the id and exit 0
  --junit FILE        write a JUnit XML report (with --wait)
  --json FILE         write a JSON report: verdict, exit code and every run's full record
  --timeout SECONDS   give up waiting after this long: abort the run(s) and exit 2
  --poll-ms MS        how often to poll the run (default 500)
  --ca-file PEM       https: trust these CAs instead of the system store
  --insecure          https: accept any certificate (self-signed lab servers only)

Ctrl-C while waiting aborts the run(s) on the server and exits 2. See docs/ci.md.
)";

namespace {

Status usage(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

bool parseNumber(const std::string& text, double& out) {
  if (text.empty()) return false;
  try {
    size_t used = 0;
    out = std::stod(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

core::FlagRules runFlagRules() {
  core::FlagRules rules{{"server", "token", "token-file", "scenario", "file", "suite", "fabric",
                         "gate", "junit", "json", "timeout", "poll-ms", "ca-file"},
                        {"wait", "help", "insecure"}};
  // Bare words are sorted out after tokenizing, so that "-h" means --help where a flag could
  // stand but stays a value after a valued flag; any other word is refused there.
  rules.positional = true;
  return rules;
}

}  // namespace

Status parseGate(const std::string& text, json& gates) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return usage("--gate \"" + text + "\": expected KEY=VALUE, e.g. min_score=60");
  }
  const std::string key = text.substr(0, eq);
  const std::string value = text.substr(eq + 1);
  if (value == "true" || value == "false") {
    gates[key] = value == "true";
    return Status::ok();
  }
  double number = 0;
  if (!parseNumber(value, number)) {
    return usage("--gate " + key + ": value \"" + value + "\" is not a number, true or false");
  }
  gates[key] = number;
  return Status::ok();
}

core::Result<RunOptions> parseRunOptions(const std::vector<std::string>& args,
                                         const OptionSources& sources) {
  RunOptions out;
  auto line = core::parseCommandLine(args, runFlagRules());
  if (!line.isOk()) return line.status();
  for (const std::string& word : line->positional) {
    if (word != "-h") return usage("unexpected argument \"" + word + "\"");
    out.help = true;
  }

  std::map<std::string, std::string> single;
  for (const core::ParsedFlag& given : line->flags) {
    if (given.name == "gate") {  // repeatable, applied in order
      FC_RETURN_IF_ERROR(parseGate(given.value, out.gates));
      continue;
    }
    if (single.count(given.name) > 0) return usage("--" + given.name + " given twice");
    single[given.name] = given.value;
  }
  if (single.count("help") > 0) out.help = true;
  if (out.help) return out;

  auto flag = [&](const std::string& name) -> std::optional<std::string> {
    auto it = single.find(name);
    if (it == single.end()) return std::nullopt;
    return it->second;
  };

  if (auto server = flag("server")) {
    out.server = *server;
  } else if (auto env = sources.getenv("FABRIC_CHAOS_SERVER"); env && !env->empty()) {
    out.server = *env;
  }
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  if (out.server.empty()) return usage("--server: empty URL");

  if (flag("token") && flag("token-file")) {
    return usage("--token and --token-file exclude each other");
  }
  if (auto token = flag("token")) {
    out.token = core::trimWhitespace(*token);
    if (out.token.empty()) return usage("--token: empty");
  } else if (auto path = flag("token-file")) {
    auto text = sources.readFile(*path);
    if (!text.isOk()) return usage("--token-file: " + text.status().message());
    out.token = core::trimWhitespace(text.value());
    if (out.token.empty()) return usage("--token-file " + *path + ": the file is empty");
  } else if (auto env = sources.getenv("FABRIC_CHAOS_TOKEN");
             env && !core::trimWhitespace(*env).empty()) {
    out.token = core::trimWhitespace(*env);
  }
  if (out.token.find_first_of(" \t\r\n") != std::string::npos) {
    return usage("the token must be one word (no spaces or line breaks)");
  }

  const int targets = (flag("scenario") ? 1 : 0) + (flag("file") ? 1 : 0) + (flag("suite") ? 1 : 0);
  if (targets != 1) {
    return usage(targets == 0 ? "say what to run: --scenario NAME, --file F or --suite NAME"
                              : "--scenario, --file and --suite exclude each other");
  }
  if (auto name = flag("scenario")) {
    out.kind = TargetKind::kScenario;
    out.name = *name;
    if (out.name.empty()) return usage("--scenario: empty name");
  } else if (auto name = flag("suite")) {
    out.kind = TargetKind::kSuite;
    out.name = *name;
    if (out.name.empty()) return usage("--suite: empty name");
    if (!out.gates.empty()) {
      return usage("--gate does not apply to --suite: a suite's scenarios carry their own gates");
    }
  } else {
    out.kind = TargetKind::kFile;
    out.file = *flag("file");
    auto text = sources.readFile(out.file);
    if (!text.isOk()) return usage("--file: " + text.status().message());
    out.document = json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
    if (out.document.is_discarded() || !out.document.is_object()) {
      return usage("--file " + out.file + ": not a JSON object (a scenario document)");
    }
    out.name = out.document.value("name", "inline");
    if (!out.document.contains("name") || !out.document["name"].is_string()) out.name = "inline";
  }

  if (auto fabric = flag("fabric")) {
    out.fabric = *fabric;
    if (out.fabric.empty()) return usage("--fabric: empty name");
  }
  out.wait = flag("wait").has_value();
  out.junit_path = flag("junit").value_or("");
  out.json_path = flag("json").value_or("");
  if (!out.wait && (!out.junit_path.empty() || !out.json_path.empty())) {
    return usage("--junit and --json need --wait (the report is written when the runs end)");
  }
  if (auto timeout = flag("timeout")) {
    if (!parseNumber(*timeout, out.timeout_s) || out.timeout_s <= 0) {
      return usage("--timeout: expected a positive number of seconds, got \"" + *timeout + "\"");
    }
  }
  if (auto poll = flag("poll-ms")) {
    double ms = 0;
    if (!parseNumber(*poll, ms) || ms < 10 || ms > 60000) {
      return usage("--poll-ms: expected 10 to 60000, got \"" + *poll + "\"");
    }
    out.poll_ms = static_cast<int>(ms);
  }
  out.ca_file = flag("ca-file").value_or("");
  out.insecure = flag("insecure").has_value();
  if (out.insecure && !out.ca_file.empty()) {
    return usage("--insecure and --ca-file exclude each other");
  }
  return out;
}

OptionSources systemOptionSources() {
  OptionSources sources;
  sources.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  sources.readFile = [](const std::string& path) -> core::Result<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return core::errnoStatus(errno, "reading " + path);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return Status(StatusCode::kInternal, "reading " + path + " failed");
    return text.str();
  };
  return sources;
}

}  // namespace fabric_chaos::client
