#pragma once
// The app's AgentDirectory: "local" is the agent embedded in serve; any other name is a remote
// agent's URL, connected on first use with the token read from its token file and kept for the
// life of the process. Thread-safe.

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "net/http_client.h"
#include "scenarios/engine/agent_directory.h"

namespace fabric_chaos::app {

class AppAgentDirectory : public scenarios::AgentDirectory {
 public:
  using RemoteFactory = std::function<core::Result<std::unique_ptr<agent::Agent>>(
      const std::string& url, const std::string& token)>;

  AppAgentDirectory(agent::Agent& local, RemoteFactory make_remote)
      : local_(local), make_remote_(std::move(make_remote)) {}

  core::Result<agent::Agent*> agentFor(const scenarios::AgentRef& ref) override;

 private:
  agent::Agent& local_;
  RemoteFactory make_remote_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<agent::Agent>> remotes_;
};

// Remote agents over HTTP or HTTPS, with tls for https:// URLs (the agents' CA and the
// controller's client certificate); their faults hold leases of lease_ms, renewed every third.
AppAgentDirectory::RemoteFactory remoteAgentFactory(net::TlsOptions tls, int64_t lease_ms = 5000);

}  // namespace fabric_chaos::app
