#pragma once
// An agent acts on one host (or, for the namespace lab, on every namespace of this machine): it
// applies and reverts faults through the injector registry and runs workload ranks. The engine
// talks to agents only through this interface, so a remote agent (VM lab, real hosts) is a drop-in.
// Implementations are thread-safe.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/status.h"
#include "injectors/injector.h"
#include "injectors/sys/rdma_devices.h"
#include "injectors/sys/verbs_shim_channel.h"
#include "workload/steps/step_parser.h"

namespace fabric_chaos::agent {

// An external workload's rank (docs/workloads.md): run by `fabric-chaos exec-rank`, which reads
// the command's output as steps. Only an agent started with --allow-exec runs one.
struct ExecRankSpec {
  std::vector<std::string> command;  // program and arguments; "{script}" names `script`
  std::string script;                // a shipped script ("pytorch-ddp"), or ""
  std::vector<std::string> env;      // NAME=VALUE, added to the rank's environment
  workload::StepParserSpec parser;
  int64_t silence_ms = 60000;
  bool reports_steps = true;  // false: the command prints no steps (only rank 0 of an MPI job)
  std::string master_addr;    // rank 0's address
  int master_port = 0;
  std::string ifname;  // the interface listen_addr is on, in the rank's namespace
};

struct RankSpec {
  int rank = 0;
  int world = 1;
  std::string netns;        // where the rank runs
  std::string listen_addr;  // this rank's address; it listens on listen_addr:port
  int port = 0;
  std::string next_addr;  // rank (rank+1)%world
  int next_port = 0;
  int64_t message_bytes = 1 << 20;
  int64_t compute_ms = 5;
  int64_t peer_timeout_ms = 10000;
  int64_t reconnect_budget_ms = 30000;
  int64_t max_duration_ms = 600000;  // the rank exits by itself after this long
  // "tcp", "verbs" (RC QPs over an RDMA device), "ib_probe" (the IB lab's workload,
  // workload/ib_probe.h: next_addr is then the port GUID its PathRecords ask for) or "exec" (an
  // external workload, `exec` below; the ring's fields are unused).
  std::string transport = "tcp";
  int dscp = 0;  // IPv4 DSCP of the ring's traffic
  // ib_probe in the IB lab: the simulated node it attaches at (SIM_HOST), through `ib_preload`
  // (umad2sim), working in `ib_dir`. Empty: a real host's own IB port.
  std::string ib_node = {};
  std::string ib_preload = {};
  std::string ib_dir = {};
  // Load the verbs fault library (docs/verbs-faults.md) in the rank, so that the verbs_* kinds
  // can arm it: the scenario has such a step. The rank's agent knows where the library is.
  bool verbs_shim = false;
  ExecRankSpec exec = {};
};

// Receives what the ranks report. Called from the agent's reader threads.
class WorkloadListener {
 public:
  virtual ~WorkloadListener() = default;
  // Samples with start_ms relative to the workload origin passed to startWorkload.
  virtual void onSamples(const std::vector<core::Sample>& samples) = 0;
  // kind: rank_ready, reconnect, stall, rank_error ...; t_ms relative to the origin.
  virtual void onEvent(int rank, double t_ms, const std::string& kind,
                       const nlohmann::json& detail) = 0;
  virtual void onRankExit(int rank, int exit_code) = 0;
};

class WorkloadHandle {
 public:
  virtual ~WorkloadHandle() = default;
  // Asks every rank to finish (SIGTERM), waits for them and their last samples; kills after
  // grace_ms. Returns when every rank has exited and every report has been delivered.
  virtual void stop(int grace_ms) = 0;
  virtual int runningRanks() const = 0;
};

// One network device of the agent's host (or of a lab namespace the agent owns).
struct AgentNetdev {
  std::string name;
  std::string netns;      // "" = the agent's own namespace
  std::string operstate;  // "up", "down", "lowerlayerdown", "unknown" ...
  std::string mac;        // "" when the device has no link-layer address
};

// The agent's clocks, read once while it answered: the controller compares realtime_ns with its
// own wall clock to show the offset; steady_ns is the base the agent's report times count from.
struct AgentClockSample {
  int64_t steady_ns = 0;    // CLOCK_MONOTONIC
  int64_t realtime_ns = 0;  // CLOCK_REALTIME, ns since the Unix epoch
};

// Who an agent is and what its host offers: what the controller shows per fabric host and
// validates scenarios against.
struct AgentInfo {
  std::string version;
  std::string hostname;
  std::vector<injectors::KindInfo> kinds;  // with availability and backend on that host
  std::vector<AgentNetdev> netdevs;
  std::vector<sys::RdmaDevice> rdma_devices;
  // The programs on the host that loaded the verbs fault library and answer on its control
  // channel (docs/verbs-faults.md): what the verbs_* kinds can act on there.
  std::vector<sys::ShimProcess> verbs_shims;
  AgentClockSample clock;
};

class Agent {
 public:
  virtual ~Agent() = default;
  // Reads the host afresh on every call (no cache): kUnavailable when a remote agent does not
  // answer within its short info timeout.
  virtual core::Result<AgentInfo> info() = 0;
  virtual std::vector<injectors::KindInfo> capabilities() = 0;
  virtual core::Status validateFault(const std::string& kind, const nlohmann::json& params) = 0;
  virtual core::Result<nlohmann::json> captureFault(const injectors::Fault& fault) = 0;
  virtual core::Status applyFault(const injectors::Fault& fault) = 0;
  virtual core::Status revertFault(const injectors::Fault& fault, const nlohmann::json& prior) = 0;
  virtual core::Result<nlohmann::json> observeFault(const injectors::Fault& fault) = 0;

  // Scheduled applies (docs/agent.md). No controller reaches a thousand hosts in the same
  // millisecond, so it hands each remote agent its fault ahead of the instant, and the agent
  // applies it by its own clock: the spread across hosts is then their timers' and clocks' error,
  // not the fan-out's. An agent that cannot (the local one, whose calls take microseconds) says
  // false and is called with applyFault at the instant.
  virtual bool appliesOnSchedule() const { return false; }
  // Delivers `fault` to be applied at `at_ns` (the caller's CLOCK_MONOTONIC). Returns once the
  // agent holds it (journaled, its state captured), before it is applied.
  virtual core::Status scheduleFault(const injectors::Fault& fault, int64_t at_ns) {
    (void)fault;
    (void)at_ns;
    return core::Status(core::StatusCode::kNotSupported, "this agent applies faults only at once");
  }
  // Waits, until `deadline_ns` at most, for a scheduled fault to be in force, and returns when it
  // came into force on the caller's CLOCK_MONOTONIC. The agent's error when its apply failed.
  virtual core::Result<int64_t> awaitScheduled(const injectors::Fault& fault, int64_t deadline_ns) {
    (void)fault;
    (void)deadline_ns;
    return core::Status(core::StatusCode::kNotSupported, "this agent applies faults only at once");
  }
  // Scheduled reverts, likewise: `scheduleRevert` hands over the instant (our CLOCK_MONOTONIC) at
  // which the agent is to observe and revert an applied fault, `awaitReverted` waits, until
  // `deadline_ns` at most, for it to be done, and says when (our clock) and what was observed.
  struct RevertedFault {
    int64_t reverted_at_ns = 0;
    nlohmann::json observed = nlohmann::json::object();
  };
  virtual core::Status scheduleRevert(const injectors::Fault& fault, int64_t at_ns) {
    (void)fault;
    (void)at_ns;
    return core::Status(core::StatusCode::kNotSupported, "this agent reverts faults only at once");
  }
  virtual core::Result<RevertedFault> awaitReverted(const injectors::Fault& fault,
                                                    int64_t deadline_ns) {
    (void)fault;
    (void)deadline_ns;
    return core::Status(core::StatusCode::kNotSupported, "this agent reverts faults only at once");
  }
  // The host's RDMA ports' hardware counters, read now (sys::RdmaDevices::hwCounters): empty on a
  // host without RDMA. What a run samples as its RDMA telemetry, so it must stay cheap.
  virtual core::Result<std::vector<sys::RdmaPortCounters>> rdmaCounters() = 0;

  // Starts one process per rank. origin_ns is the steady-clock instant that sample times are
  // made relative to.
  virtual core::Result<std::unique_ptr<WorkloadHandle>> startWorkload(
      const std::vector<RankSpec>& ranks, int64_t origin_ns, WorkloadListener* listener) = 0;
};

}  // namespace fabric_chaos::agent
