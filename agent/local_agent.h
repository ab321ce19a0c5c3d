#pragma once
// The agent embedded in `serve`: drives the injector registry directly and starts workload ranks
// as child processes of this binary inside the lab's namespaces. Each rank's stdout (the report
// line protocol, workload/report.h) is read by one thread that turns it into samples and events
// for the listener. In serve it also guards the blast radius: captureFault/applyFault refuse an
// interface off its allowlist (kPermissionDenied, nothing touched); revertFault never checks, so a
// fault applied under an older list is still undone. Thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/exec_rank_args.h"
#include "injectors/registry.h"
#include "injectors/sys/links.h"
#include "injectors/sys/process.h"
#include "injectors/sys/rdma_devices.h"

namespace fabric_chaos::agent {

// Which interfaces the embedded agent may fault. Without `allowed` there is no guard: that is
// `fabric-chaos agent`, whose AgentService checks its own --allow list before calling the agent.
struct TargetGuard {
  // "netns/ifname", or "ifname" in the initial namespace. Called on every capture and apply, so
  // that a fabric registered after start-up (`lab up` in another process) is seen at once.
  std::function<std::vector<std::string>()> allowed;
  // Initial-namespace interfaces that carry serve's own connections: refused even when listed.
  std::vector<std::string> management;
};

struct LocalAgentOptions {
  std::string self_exe;    // the fabric-chaos binary, started as `self_exe workload ...`
  std::string log_dir;     // rank stderr goes to <log_dir>/rank-<n>.log; "" = inherit
  TargetGuard guard = {};  // no guard unless set (agent mode)
  // What info() reports about this host. Without `links` it lists no netdevs, without `rdma` no
  // RDMA devices (tests that need neither).
  std::string version = {};
  std::string hostname = {};
  sys::LinkControl* links = nullptr;
  sys::RdmaDevices* rdma = nullptr;
  // The namespaces whose links info() lists, "" being this process's own: serve adds the lab
  // namespaces it drives (re-read per call, as fabrics come and go). Unset: only "".
  std::function<std::vector<std::string>()> netdev_namespaces = {};
  // The verbs fault library ranks load when their spec asks (RankSpec::verbs_shim), and the
  // directory of its control sockets, where the verbs_* kinds find them. "" library: such ranks
  // are refused.
  std::string verbs_shim_library = {};
  std::string verbs_shim_dir = {};
  // The shim-loaded programs info() lists; null: none.
  sys::VerbsShimChannel* verbs_shims = nullptr;
  // Whether ranks of external workloads (RankSpec transport "exec": a command the controller
  // names, run as this agent's user) may start. Off unless the operator says so (--allow-exec).
  bool allow_exec = false;
};

class LocalAgent : public Agent {
 public:
  LocalAgent(injectors::Registry& registry, sys::ProcessLauncher& launcher,
             LocalAgentOptions options);

  // A namespace that vanished while listing (a lab going down) is skipped, not an error.
  core::Result<AgentInfo> info() override;
  std::vector<injectors::KindInfo> capabilities() override;
  core::Status validateFault(const std::string& kind, const nlohmann::json& params) override;
  core::Result<nlohmann::json> captureFault(const injectors::Fault& fault) override;
  core::Status applyFault(const injectors::Fault& fault) override;
  core::Status revertFault(const injectors::Fault& fault, const nlohmann::json& prior) override;
  core::Result<nlohmann::json> observeFault(const injectors::Fault& fault) override;
  // Without `rdma` in the options: none.
  core::Result<std::vector<sys::RdmaPortCounters>> rdmaCounters() override;
  core::Result<std::unique_ptr<WorkloadHandle>> startWorkload(const std::vector<RankSpec>& ranks,
                                                              int64_t origin_ns,
                                                              WorkloadListener* listener) override;

  // Whether the guard lets a fault touch target (ok when there is no guard): the check
  // captureFault and applyFault make, exposed so that callers can refuse before planning.
  core::Status checkTarget(const injectors::Target& target) const;

  // The argv that starts one rank (exposed for tests).
  static std::vector<std::string> rankArgv(const std::string& self_exe, const RankSpec& spec,
                                           const VerbsShimLoad& shim = {});

 private:
  core::Result<injectors::Injector*> find(const std::string& kind);

  injectors::Registry& registry_;
  sys::ProcessLauncher& launcher_;
  LocalAgentOptions options_;
};

// Feeds one rank's report lines to a listener, converting steady-clock ns to ms from origin_ns.
// Returns false for a line that is not valid protocol (reported as a "bad_report" event).
bool deliverReportLine(const std::string& line, int rank, int64_t origin_ns,
                       WorkloadListener& listener);

}  // namespace fabric_chaos::agent
