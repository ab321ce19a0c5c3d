#include "app/agent_directory.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "agent/remote_agent.h"

namespace fabric_chaos::app {

core::Result<agent::Agent*> AppAgentDirectory::agentFor(const scenarios::AgentRef& ref) {
  if (ref.isLocal()) return &local_;
  std::lock_guard lock(mu_);
  if (auto it = remotes_.find(ref.name); it != remotes_.end()) return it->second.get();
  std::string token;
  if (!ref.token_file.empty()) {
    std::ifstream in(ref.token_file);
    if (!in) {
      return core::Status(core::StatusCode::kFailedPrecondition,
                          "cannot read the token file " + ref.token_file + " of agent " + ref.name);
    }
    std::getline(in, token);
    // The agent trims its copy the same way: a trailing CR or blank must not fail the handshake.
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.pop_back();
    }
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) {
      token.erase(0, 1);
    }
  }
  auto remote = make_remote_(ref.name, token);
  if (!remote.isOk()) return remote.status().withContext("agent " + ref.name);
  agent::Agent* raw = remote.value().get();
  remotes_[ref.name] = std::move(remote.value());
  return raw;
}

AppAgentDirectory::RemoteFactory remoteAgentFactory(net::TlsOptions tls, int64_t lease_ms) {
  return [tls = std::move(tls), lease_ms](const std::string& url, const std::string& token) {
    agent::RemoteAgentOptions options;
    options.base_url = url;
    options.token = token;
    options.tls = tls;
    options.lease_ms = lease_ms;
    return core::Result<std::unique_ptr<agent::Agent>>(agent::makeRemoteAgent(std::move(options)));
  };
}

}  // namespace fabric_chaos::app
