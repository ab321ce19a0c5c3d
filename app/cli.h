#pragma once
// Subcommands of the fabric-chaos binary and the small flag parser they share. The app layer is
// the only place where modules are wired together.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::app {

int serveMain(int argc, char** argv);
int labMain(int argc, char** argv);
int workloadMain(int argc, char** argv);
int agentMain(int argc, char** argv);
// The pfc_storm emitter (app/pfc_emit_cmd.cc); argv[0] is "pfc-emit".
int pfcEmitMain(int argc, char** argv);

// --name value / --name=value flags after the subcommand; positional words kept in order.
// Unknown flags are reported by the caller with the list it accepts.
struct Flags {
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;
  std::string error;  // set when a flag lacks its value

  std::optional<std::string> get(const std::string& name) const;
  std::string getOr(const std::string& name, const std::string& fallback) const;
  bool has(const std::string& name) const { return values.count(name) > 0; }
  // The first flag not in `allowed`, or "".
  std::string unknown(const std::vector<std::string>& allowed) const;
};

// Flags listed in `boolean` take no value.
Flags parseFlags(int argc, char** argv, const std::vector<std::string>& boolean = {});

}  // namespace fabric_chaos::app
