#pragma once
// The controller's side of the remote-agent protocol (docs/agent.md): an Agent that drives
// `fabric-chaos agent` on another host over HTTP with a bearer token. Every applied fault holds a
// lease that a background thread renews every lease_ms/3 while this object lives; if the
// controller dies (or just destroys the RemoteAgent without reverting), the agent reverts the
// fault by itself within lease_ms + ~0.1 s. A workload's reports are long-polled by one thread per
// workload and mapped from the agent's clock to ours. Unreachable agents are kUnavailable errors
// naming the URL. Thread-safe.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/agent.h"
#include "core/status.h"
#include "net/http_client.h"

namespace fabric_chaos::agent {

struct RemoteAgentOptions {
  std::string base_url;  // "http://127.0.0.1:7101"
  std::string token;
  int64_t lease_ms = 5000;
  int request_timeout_ms = 5000;
  // Applying and reverting a fault: a long-running kind's apply waits for its processes' first
  // word (seconds in a qemu TCG guest reading the binary over 9p) or samples the fabric first
  // (hot_spot's sample_ms, up to 10 s), and a revert lets each generator finish (1 s apiece).
  int act_timeout_ms = 30000;
  // info() only: the controller asks every host of a fabric when showing or validating it, and
  // one dead host must not hold that up for the full request timeout.
  int info_timeout_ms = 2000;
  // For https:// agents: the CA that signed the agents' certificates, and the controller's
  // client certificate for agents that verify their clients (`agent --tls-client-ca`).
  net::TlsOptions tls = {};
};

// Does no network I/O: an unreachable agent shows up at the first call.
std::unique_ptr<Agent> makeRemoteAgent(RemoteAgentOptions options);

// GET /agent/v1/info once: a heartbeat, and what the agent says about its host.
core::Result<nlohmann::json> fetchRemoteAgentInfo(const RemoteAgentOptions& options);

// Maps another host's CLOCK_MONOTONIC to ours from request/response exchanges: the remote stamped
// its clock somewhere between our send and our receive, so offset = remote - midpoint with an error
// of at most half the round trip; the exchange with the smallest round trip wins (NTP's rule).
// Pure; not thread-safe.
class ClockOffsetEstimator {
 public:
  // send_ns and recv_ns are our clock around one exchange; remote_ns the remote's stamp.
  void add(int64_t send_ns, int64_t remote_ns, int64_t recv_ns);
  bool valid() const { return samples_ > 0; }
  int samples() const { return samples_; }
  int64_t offsetNs() const { return offset_ns_; }  // remote - local
  int64_t bestRoundTripNs() const { return best_rtt_ns_; }
  int64_t toLocalNs(int64_t remote_ns) const { return remote_ns - offset_ns_; }

 private:
  int samples_ = 0;
  int64_t best_rtt_ns_ = 0;
  int64_t offset_ns_ = 0;
};

}  // namespace fabric_chaos::agent
