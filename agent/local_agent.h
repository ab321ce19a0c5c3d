#pragma once
// The agent embedded in `serve`: drives the injector registry directly and starts workload ranks
// as child processes of this binary inside the lab's namespaces. Each rank's stdout (the report
// line protocol, workload/report.h) is read by one thread that turns it into samples and events
// for the listener. Thread-safe.

#include <memory>
#include <string>

#include "agent/agent.h"
#include "injectors/registry.h"
#include "injectors/sys/process.h"

namespace fabric_chaos::agent {

struct LocalAgentOptions {
  std::string self_exe;  // the fabric-chaos binary, started as `self_exe workload ...`
  std::string log_dir;   // rank stderr goes to <log_dir>/rank-<n>.log; "" = inherit
};

class LocalAgent : public Agent {
 public:
  LocalAgent(injectors::Registry& registry, sys::ProcessLauncher& launcher,
             LocalAgentOptions options);

  std::vector<injectors::KindInfo> capabilities() override;
  core::Status validateFault(const std::string& kind, const nlohmann::json& params) override;
  core::Result<nlohmann::json> captureFault(const injectors::Fault& fault) override;
  core::Status applyFault(const injectors::Fault& fault) override;
  core::Status revertFault(const injectors::Fault& fault, const nlohmann::json& prior) override;
  core::Result<nlohmann::json> observeFault(const injectors::Fault& fault) override;
  core::Result<std::unique_ptr<WorkloadHandle>> startWorkload(const std::vector<RankSpec>& ranks,
                                                              int64_t origin_ns,
                                                              WorkloadListener* listener) override;

  // The argv that starts one rank (exposed for tests).
  static std::vector<std::string> rankArgv(const std::string& self_exe, const RankSpec& spec);

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
