#pragma once
// The agent's side of the remote-agent protocol (docs/agent.md): a pure Request -> Response
// handler over an Agent (the LocalAgent in `fabric-chaos agent`), the lease manager that reverts a
// fault whose controller stopped renewing it, the journal that lets a restarted agent revert what
// a crashed one left behind, and the buffers that hold workload reports until the controller
// long-polls them. handle() runs on the HTTP worker threads and is thread-safe; every fault
// operation (HTTP or lease expiry) holds one mutex, so an injector never sees two threads at once.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/agent.h"
#include "agent/host_probe.h"
#include "agent/report_buffer.h"
#include "agent/target_allowlist.h"
#include "core/http_message.h"
#include "core/status.h"

namespace fabric_chaos::agent {

// Token comparison whose time does not depend on where the strings differ.
bool constantTimeEquals(std::string_view a, std::string_view b);

struct AgentServiceOptions {
  std::string token;  // required: a request without "Authorization: Bearer <token>" gets 401
  std::string agent_id;
  std::string version;
  std::vector<std::string> allowed_interfaces;     // see checkTargetAllowed
  std::vector<std::string> management_interfaces;  // carry the controller's connection
  RdmaNetdevLookup rdma_netdev = {};               // see checkTargetAllowed; empty: refused
  std::string journal_path;  // active faults are written here before they are applied; "" = off
  int64_t default_lease_ms = 5000;
  int64_t max_lease_ms = 600000;
  int lease_check_ms = 100;
  int revert_retry_ms = 1000;  // after a failed lease-expiry revert
  // A scheduled apply (POST /faults with apply_at_ns) may name an instant at most this far ahead.
  int64_t max_schedule_ahead_ms = 10000;
  size_t report_buffer_entries = 100000;  // per workload (samples + events); oldest dropped beyond
  size_t max_batch_entries = 5000;        // per long-poll answer
  int max_wait_ms = 10000;                // long-poll cap
  size_t retained_finished_workloads = 8;
};

class AgentService {
 public:
  AgentService(Agent& agent, HostProbe& probe, AgentServiceOptions options);
  // Stops the lease thread and the workloads. Does not revert faults: call shutdown() for that.
  ~AgentService();
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  struct Recovery {
    int reverted = 0;
    int failed = 0;  // kept active: the lease manager retries them every revert_retry_ms
  };
  // Reverts what the journal says a previous process left applied. Call once, before serving.
  Recovery recoverJournal();

  // The agent's timekeeper: applies scheduled faults at their instant and reverts expired leases.
  void startLeaseThread();
  core::HttpResponse handle(const core::HttpRequest& request);

  // One pass of the lease manager (the lease thread runs it every lease_check_ms): reverts every
  // fault whose lease has expired. Returns how many were reverted.
  int expireLeases();
  // Applies, oldest first, every scheduled fault whose instant has come (the lease thread wakes for
  // the earliest one). Returns how many came into force; one that fails is put back as it was,
  // dropped, and its error kept for the controller's GET.
  int applyDue();
  // Reverts, oldest first, every applied fault whose scheduled revert (POST
  // /faults/{id}/revert-at) has come, observing it just before. Returns how many were reverted;
  // one that fails stays, with its error for the controller's GET.
  int revertDue();

  // Refuses new work (503), wakes long polls, stops the workloads (grace_ms each) and reverts every
  // active fault. Returns the number of faults that could not be reverted. Idempotent.
  int shutdown(int workload_grace_ms);

  size_t activeFaults() const;

 private:
  // A fault is scheduled from an apply that named a future instant until that instant, applied
  // from then on.
  enum class FaultPhase { kScheduled, kApplied };
  struct ActiveFault {
    std::string id;
    injectors::Fault fault;
    nlohmann::json prior;
    int64_t lease_ms = 0;
    int64_t lease_deadline_ns = 0;
    int64_t retry_at_ns = 0;  // after a failed revert
    FaultPhase phase = FaultPhase::kApplied;
    int64_t apply_at_ns = 0;    // kScheduled: when to apply (CLOCK_MONOTONIC)
    int64_t applied_at_ns = 0;  // kApplied: when the injector returned
    int64_t revert_at_ns = 0;   // a scheduled revert's instant; 0 = none
    std::string revert_error;   // why the scheduled revert failed (the fault stays)
  };
  // A fault reverted at its scheduled instant: what GET /faults/{id} answers afterwards.
  struct RevertedRecord {
    int64_t reverted_at_ns = 0;
    nlohmann::json observed;
  };
  struct Workload;

  core::HttpResponse route(const core::HttpRequest& request);
  core::HttpResponse info();
  core::HttpResponse describe();
  core::HttpResponse rdmaCounters();  // GET /agent/v1/rdma/counters
  core::HttpResponse listFaults();
  core::HttpResponse applyFault(const std::string& body);
  core::HttpResponse renewFault(const std::string& id, const std::string& body);
  core::HttpResponse scheduleRevert(const std::string& id, const std::string& body);
  // An instant (apply_at_ns, revert_at_ns) at most max_schedule_ahead_ms ahead of now_ns.
  core::Status checkNotTooFarAhead(const std::string& field, int64_t at_ns, int64_t now_ns) const;
  core::HttpResponse getFault(const std::string& id, const std::string& query);
  core::HttpResponse deleteFault(const std::string& id);
  core::HttpResponse revertByDescription(const std::string& body);
  core::HttpResponse observeByDescription(const std::string& body);
  core::HttpResponse validate(const std::string& body);
  core::HttpResponse startWorkload(const std::string& body);
  core::HttpResponse workloadReports(const std::string& id, const std::string& query);
  core::HttpResponse stopWorkload(const std::string& id, const std::string& query);

  // Callers hold fault_mu_.
  ActiveFault* findByTarget(const injectors::Fault& fault);
  core::Status revertLocked(const ActiveFault& active, const std::string& why);
  core::Status persistLocked();
  // The answer to an apply: what the controller needs to renew, revert and confirm it.
  nlohmann::json faultStateLocked(const ActiveFault& active) const;
  // The earliest scheduled apply or revert, or 0 when none is pending.
  int64_t nextScheduledNs() const;
  void rememberPriorLocked(const injectors::Fault& fault, const nlohmann::json& prior);
  std::shared_ptr<Workload> findWorkload(const std::string& id);
  void leaseLoop();

  Agent& agent_;
  HostProbe& probe_;
  const AgentServiceOptions options_;

  mutable std::mutex fault_mu_;
  // By id ("f-N"), newest (largest N) first: every revert-all (shutdown, expiry, journal
  // recovery) takes stacked faults back in reverse order of application.
  struct NewestFirst {
    bool operator()(const std::string& a, const std::string& b) const;
  };
  std::map<std::string, ActiveFault, NewestFirst> faults_;
  int64_t next_fault_id_ = 1;
  // The prior of recently reverted faults, by kind/netns/ifname, for revert-by-description.
  std::map<std::string, nlohmann::json> recent_priors_;
  std::vector<std::string> recent_order_;
  // Scheduled applies that failed at their instant, by id: what GET /faults/{id} answers.
  std::map<std::string, std::string> failed_schedules_;
  std::vector<std::string> failed_order_;
  // Faults reverted at their scheduled instant, by id, likewise.
  std::map<std::string, RevertedRecord> reverted_schedules_;
  std::vector<std::string> reverted_order_;

  std::mutex workload_mu_;
  std::map<std::string, std::shared_ptr<Workload>> workloads_;
  std::vector<std::string> finished_order_;
  int64_t next_workload_id_ = 1;

  std::mutex lease_mu_;
  std::condition_variable lease_cv_;
  bool lease_stop_ = false;
  bool schedule_changed_ = false;  // a fault was scheduled: the lease thread looks again
  std::thread lease_thread_;

  std::atomic<bool> shutting_down_{false};
};

}  // namespace fabric_chaos::agent
