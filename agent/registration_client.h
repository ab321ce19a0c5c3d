#pragma once
// The agent's side of registration (`agent --register URL`, docs/deployment.md): which NICs it
// reports, and a thread that POSTs /v1/agents/register to the controller now and then every
// interval, so a restarted controller or a new address is picked up without an operator. A
// failure is logged (once per distinct message) and retried; it never stops the agent.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/agent_service.h"
#include "net/http_client.h"

namespace fabric_chaos::agent {

// The NICs a registration reports: the allowlist's interfaces of this namespace when there is one
// ("ns/eth0" entries are left out: they are not this host's NICs), else every interface with an
// address but loopback and the management ones.
std::vector<NetdevInfo> registrationNics(const std::vector<NetdevInfo>& netdevs,
                                         const std::vector<std::string>& allowed,
                                         const std::vector<std::string>& management);

struct RegistrationClientOptions {
  std::string controller_url;   // serve's base URL
  std::string token;            // an operator token of serve
  net::TlsOptions tls;          // to check serve's certificate
  nlohmann::json registration;  // the body (scenarios/registration.h's JSON)
  int interval_ms = 30000;
  int timeout_ms = 5000;
};

class RegistrationClient {
 public:
  explicit RegistrationClient(RegistrationClientOptions options);
  ~RegistrationClient();  // stops the thread
  RegistrationClient(const RegistrationClient&) = delete;
  RegistrationClient& operator=(const RegistrationClient&) = delete;

  int successes() const { return successes_; }

 private:
  void loop();
  bool registerOnce(std::string* problem);

  const RegistrationClientOptions options_;
  net::HttpClient client_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<int> successes_{0};
  std::thread thread_;
};

}  // namespace fabric_chaos::agent
