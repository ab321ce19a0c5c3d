#pragma once
// Subcommands of the fabric-chaos binary and the small flag parser they share. The app layer is
// the only place where modules are wired together.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/command_line.h"

namespace fabric_chaos::app {

int serveMain(int argc, char** argv);
int labMain(int argc, char** argv);
int workloadMain(int argc, char** argv);
// One rank of an external workload (app/exec_rank_cmd.cc); argv[0] is "exec-rank".
int execRankMain(int argc, char** argv);
// Prints a shipped workload script; argv[0] is "workload-script", argv[1] its name.
int workloadScriptMain(int argc, char** argv);
int agentMain(int argc, char** argv);
// Many simulated agents in one process, for fleet-scale benches (app/agent_sim_cmd.cc).
int agentSimMain(int argc, char** argv);
// The pfc_storm emitter (app/pfc_emit_cmd.cc); argv[0] is "pfc-emit".
int pfcEmitMain(int argc, char** argv);
// The PFC agent of a lab switch (app/pfc_switch_cmd.cc); argv[0] is "pfc-switch".
int pfcSwitchMain(int argc, char** argv);
// The TCP traffic generator (app/traffic_cmd.cc); argv[0] is "traffic".
int trafficMain(int argc, char** argv);
// The IB lab's workload rank (app/ib_probe_cmd.cc): `ib-probe ...`.
int ibProbeMain(int argc, char** argv);
// One IB switch port read or set by direct route (app/ib_port_cmd.cc): `ib-port ...`.
int ibPortMain(int argc, char** argv);
// Fabric descriptions from discovery output (app/fabric_cmd.cc): `fabric import ...`.
int fabricMain(int argc, char** argv);

// The flags after the subcommand, by name (a repeated flag keeps its last value), and the
// positional words in order when the rules allow them.
struct Flags {
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;
  // The first usage problem (core/command_line.h's wording); when set, values and positional
  // are empty, so a command prints it before looking at --help.
  std::string error;

  std::optional<std::string> get(const std::string& name) const;
  std::string getOr(const std::string& name, const std::string& fallback) const;
  bool has(const std::string& name) const { return values.count(name) > 0; }
};

// argv[0..argc) tokenized with core::parseCommandLine.
Flags parseFlags(int argc, char** argv, const core::FlagRules& rules);

// Reads the integer flag `name` into `out` when it is given (`out` keeps its value otherwise),
// within [low, high]; a value that is not one prints "fabric-chaos <command>: <why>" on stderr
// and returns false. The int form takes any int: the caller checks its own range and says it.
bool readIntFlag(const Flags& flags, const std::string& command, const std::string& name,
                 int64_t low, int64_t high, int64_t& out);
bool readIntFlag(const Flags& flags, const std::string& command, const std::string& name, int& out);

// A lab action's exit code: 0 when `status` is OK, else 1 after "fabric-chaos lab <action>:
// <message>" on stderr.
int labOutcome(const std::string& action, const core::Status& status);

}  // namespace fabric_chaos::app
