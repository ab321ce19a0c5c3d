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
#include "core/http_message.h"
#include "core/status.h"

namespace fabric_chaos::agent {

// What /info says about the host. The real probe reads sysfs, getifaddrs and uname; tests point it
// at a directory tree shaped like /sys.
struct NetdevInfo {
  std::string name;
  std::string address;  // first IPv4 address, else first IPv6, else ""
  std::string mac;
  std::string operstate;
  int mtu = 0;
};

struct RdmaPortInfo {
  std::string name;  // "rxe0", "mlx5_0"
  int port = 1;
  std::string state;   // "4: ACTIVE"
  std::string gid;     // gids/0
  std::string netdev;  // gid_attrs/ndevs/0, "" when the kernel does not say
};

class HostProbe {
 public:
  virtual ~HostProbe() = default;
  virtual std::string hostname() = 0;
  virtual std::string kernelRelease() = 0;
  virtual std::vector<NetdevInfo> netdevs() = 0;
  virtual std::vector<RdmaPortInfo> rdmaPorts() = 0;
};

// sys_root is "/sys" on a real host; a missing directory or file is an empty answer, not an error.
std::unique_ptr<HostProbe> makeSystemHostProbe(std::string sys_root = "/sys");

// The interface holding the default route in the text of /proc/net/route (lowest metric wins);
// "" when there is none.
std::string defaultRouteInterface(const std::string& proc_net_route);

// Token comparison whose time does not depend on where the strings differ.
bool constantTimeEquals(std::string_view a, std::string_view b);

inline constexpr std::string_view kRestartWithAllow = "restart the agent with --allow to change it";

// The netdev an RDMA port sends through (RoCE, iWARP): "eth0" for rxe0 port 1. kNotFound for an
// unknown device or port; "" for a port without one (native InfiniBand).
using RdmaNetdevLookup =
    std::function<core::Result<std::string>(const injectors::RdmaPortTarget& port)>;

// Whether a fault may touch target: the management interfaces (in the agent's own namespace) never,
// otherwise anything when `allowed` is empty (nothing when !empty_allows_any: the agent embedded in
// serve, whose list comes from the registered fabrics), else only a listed "ifname" (agent's own
// namespace) or "netns/ifname". kPermissionDenied says which rule refused and ends with `remedy`.
// The list names interfaces: a traffic set is allowed when each of its endpoints is, and an RDMA
// port when its netdev (found through `rdma_netdev`, in the agent's own namespace, where RDMA
// devices live) is: a device fault changes that netdev's state, addresses or MTU, or takes away
// the device on it. IB ports and subnet managers are listed by their lock key
// (injectors/model/target.h lockKeys). Processes are always allowed: the verbs kinds act only on
// programs that loaded the verbs fault library into this agent's own socket directory. An RDMA
// port without `rdma_netdev`, or whose port has no netdev, is refused naming the reason.
core::Status checkTargetAllowed(const injectors::Target& target,
                                const std::vector<std::string>& allowed,
                                const std::vector<std::string>& management,
                                bool empty_allows_any = true,
                                std::string_view remedy = kRestartWithAllow,
                                const RdmaNetdevLookup& rdma_netdev = {});

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

// The WorkloadListener behind one agent-side workload: keeps what the ranks report, numbered,
// until the controller long-polls it. Times are kept as the ranks wrote them, steady-clock ns minus
// the workload's origin_ns (0: the agent's raw CLOCK_MONOTONIC). Samples and events beyond
// `capacity` push out the oldest, which the next reader learns from a "reports_dropped" event; rank
// exits are never dropped. Thread-safe.
class ReportBuffer : public WorkloadListener {
 public:
  ReportBuffer(int64_t origin_ns, int ranks, size_t capacity);

  void onSamples(const std::vector<core::Sample>& samples) override;
  void onEvent(int rank, double t_ms, const std::string& kind,
               const nlohmann::json& detail) override;
  void onRankExit(int rank, int exit_code) override;

  struct Batch {
    int64_t next = 0;  // pass as `after` to get what follows
    nlohmann::json samples =
        nlohmann::json::array();  // [[rank, iteration, start_ns, dur_ns, bytes]]
    nlohmann::json events = nlohmann::json::array();  // [{"rank", "t_ns", "kind", "detail"}]
    nlohmann::json exits = nlohmann::json::array();   // [{"rank", "code"}]
    int running = 0;                                  // ranks that have not exited
    bool complete = false;  // every rank has exited (or the workload was stopped) and nothing is
                            // left after `next`
    int64_t dropped_total = 0;
  };
  // Everything after sequence number `after` (at most max_entries samples and events), waiting up
  // to wait_ms for something to arrive when there is nothing yet.
  Batch fetch(int64_t after, size_t max_entries, int wait_ms);
  // The workload's handle has stopped: every report is in, nothing more will come.
  void markStopped();
  // Wakes every waiting fetch for good (agent shutdown).
  void close();
  bool complete() const;

 private:
  struct Entry {
    int64_t seq = 0;
    bool is_event = false;
    int rank = 0;
    int64_t iteration = 0;  // samples
    int64_t t_ns = 0;       // sample start or event time
    int64_t duration_ns = 0;
    int64_t bytes = 0;
    std::string kind;  // events
    nlohmann::json detail;
  };
  struct Exit {
    int64_t seq = 0;
    int rank = 0;
    int code = 0;
  };
  void pushLocked(Entry entry);
  int64_t exitsBetweenLocked(int64_t after, int64_t through) const;

  const int64_t origin_ns_;
  const int ranks_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> entries_;
  std::vector<Exit> exits_;
  int64_t last_seq_ = 0;
  int64_t evicted_through_seq_ = 0;  // every sample/event up to here has been dropped
  int64_t dropped_total_ = 0;
  bool stopped_ = false;
  bool closed_ = false;
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
  };
  struct Workload;

  core::HttpResponse route(const core::HttpRequest& request);
  core::HttpResponse info();
  core::HttpResponse describe();
  core::HttpResponse rdmaCounters();  // GET /agent/v1/rdma/counters
  core::HttpResponse listFaults();
  core::HttpResponse applyFault(const std::string& body);
  core::HttpResponse renewFault(const std::string& id, const std::string& body);
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
  // The earliest scheduled apply, or 0 when none is pending.
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
