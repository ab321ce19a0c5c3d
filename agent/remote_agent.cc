#include "agent/remote_agent.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "agent/agent_service.h"
#include "agent/agent_wire.h"
#include "core/clock.h"
#include "core/http_message.h"
#include "core/log.h"
#include "net/http_client.h"

namespace fabric_chaos::agent {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

constexpr int64_t kCapabilityTtlNs = 30'000'000'000;
constexpr int kPollWaitMs = 1000;
constexpr int kClockSeedExchanges = 3;
constexpr int kConfirmRetryMs = 5;  // between asks while a scheduled fault is still pending

int64_t msToNs(int64_t ms) { return ms * 1000000; }

// One agent's endpoint, token and clock mapping; shared by the RemoteAgent and its workloads so
// that either may outlive the other.
class Connection {
 public:
  explicit Connection(RemoteAgentOptions options)
      : options_(std::move(options)),
        client_(options_.base_url, options_.request_timeout_ms, options_.tls) {}

  const RemoteAgentOptions& options() const { return options_; }
  const std::string& url() const { return options_.base_url; }

  // The JSON object a 2xx answer carries; an HTTP error becomes the Status its code maps to, with
  // the agent's message; a transport failure is kUnavailable.
  core::Result<json> call(const std::string& method, const std::string& target,
                          const json* body = nullptr, int timeout_ms = 0) {
    if (!client_.status().isOk()) return client_.status().withContext("agent " + url());
    core::HttpRequest request;
    request.method = method;
    request.target = target;
    request.headers["Authorization"] = "Bearer " + options_.token;
    request.headers["Accept"] = "application/json";
    if (body != nullptr) request.body = body->dump();
    const int64_t sent = core::steadyNowNs();
    auto response = client_.send(request, timeout_ms);
    const int64_t received = core::steadyNowNs();
    if (!response.isOk()) {
      return Status(StatusCode::kUnavailable, "agent unreachable: " + response.status().message(),
                    response.status().origin());
    }
    json doc = json::parse(response->body, nullptr, false);
    if (doc.is_object()) {
      auto now = doc.find("agent_now_ns");
      if (now != doc.end() && now->is_number_integer()) {
        std::lock_guard lock(mu_);
        estimator_.add(sent, now->get<int64_t>(), received);
      }
    }
    if (response->status >= 400) {
      std::string message = response->body.substr(0, 300);
      if (doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
        message = doc["error"].value("message", message);
      }
      return Status(core::statusCodeForHttp(response->status),
                    "agent " + url() + " (" + method + " " + target + "): " + message);
    }
    if (!doc.is_object()) {
      return Status(StatusCode::kInternal,
                    "agent " + url() + " answered " + method + " " + target + " with non-JSON");
    }
    return doc;
  }

  int64_t toLocalNs(int64_t agent_ns) {
    std::lock_guard lock(mu_);
    return estimator_.valid() ? estimator_.toLocalNs(agent_ns) : agent_ns;
  }

  // Ours to the agent's; nullopt until an answer has carried the agent's clock.
  std::optional<int64_t> toRemoteNs(int64_t local_ns) {
    std::lock_guard lock(mu_);
    if (!estimator_.valid()) return std::nullopt;
    return local_ns + estimator_.offsetNs();
  }

  int clockSamples() {
    std::lock_guard lock(mu_);
    return estimator_.samples();
  }

 private:
  const RemoteAgentOptions options_;
  const net::HttpClient client_;
  std::mutex mu_;
  ClockOffsetEstimator estimator_;
};

class RemoteWorkload : public WorkloadHandle {
 public:
  RemoteWorkload(std::shared_ptr<Connection> connection, std::string id, std::vector<int> ranks,
                 int64_t origin_ns, WorkloadListener* listener)
      : connection_(std::move(connection)),
        id_(std::move(id)),
        ranks_(std::move(ranks)),
        origin_ns_(origin_ns),
        listener_(listener) {
    poller_ = std::thread([this] { pollLoop(); });
  }

  ~RemoteWorkload() override { stop(0); }

  void stop(int grace_ms) override {
    std::lock_guard stop_lock(stop_mu_);
    if (stopped_) return;
    stopped_ = true;
    const int timeout = connection_->options().request_timeout_ms;
    bool finished;
    {
      std::lock_guard lock(mu_);
      finished = done_;
    }
    if (!finished) {
      auto stopped = connection_->call(
          "DELETE", "/agent/v1/workloads/" + id_ + "?grace_ms=" + std::to_string(grace_ms), nullptr,
          grace_ms + timeout);
      if (!stopped.isOk() && stopped.status().code() != StatusCode::kNotFound) {
        core::logWarn("remote workload " + id_ + ": " + stopped.status().message());
      }
      // Time for the poller to fetch the last reports; it gives up when the agent stays silent.
      std::unique_lock lock(mu_);
      give_up_at_ns_ = core::steadyNowNs() + msToNs(stopped.isOk() ? 2 * timeout + 1000 : 0);
      cv_.notify_all();
      const auto limit = std::chrono::milliseconds(3 * timeout + kPollWaitMs + 1000);
      if (!cv_.wait_for(lock, limit, [&] { return done_; })) abandon_ = true;
      cv_.notify_all();
    }
    if (poller_.joinable()) poller_.join();
    // Ranks the agent never reported as exited (it became unreachable): they are lost to us.
    finishMissingExits("the agent did not report this rank's exit");
  }

  int runningRanks() const override {
    std::lock_guard lock(mu_);
    return static_cast<int>(ranks_.size() - exited_.size());
  }

 private:
  double runMs(int64_t agent_ns) {
    return static_cast<double>(connection_->toLocalNs(agent_ns) - origin_ns_) / 1e6;
  }

  double nowRunMs() const { return static_cast<double>(core::steadyNowNs() - origin_ns_) / 1e6; }

  void finishMissingExits(const std::string& why) {
    std::vector<int> missing;
    {
      std::lock_guard lock(mu_);
      for (int rank : ranks_) {
        if (exited_.insert(rank).second) missing.push_back(rank);
      }
    }
    for (int rank : missing) {
      listener_->onEvent(rank, nowRunMs(), "rank_lost",
                         {{"agent", connection_->url()}, {"reason", why}});
      listener_->onRankExit(rank, -1);
    }
  }

  // Hands one batch to the listener; returns whether the agent says the workload is complete.
  bool deliver(const json& batch, int64_t& next) {
    for (const auto& event : batch.value("events", json::array())) {
      listener_->onEvent(event.value("rank", -1), runMs(event.value("t_ns", int64_t{0})),
                         event.value("kind", "unknown"), event.value("detail", json::object()));
    }
    std::vector<core::Sample> samples;
    for (const auto& row : batch.value("samples", json::array())) {
      if (!row.is_array() || row.size() < 5) continue;
      core::Sample sample;
      sample.rank = row[0].get<int>();
      sample.iteration = row[1].get<int64_t>();
      sample.start_ms = runMs(row[2].get<int64_t>());
      sample.duration_ms = static_cast<double>(row[3].get<int64_t>()) / 1e6;
      sample.bytes = row[4].get<int64_t>();
      samples.push_back(sample);
    }
    if (!samples.empty()) listener_->onSamples(samples);
    for (const auto& exit : batch.value("exits", json::array())) {
      const int rank = exit.value("rank", -1);
      bool first;
      {
        std::lock_guard lock(mu_);
        first = exited_.insert(rank).second;
      }
      if (first) listener_->onRankExit(rank, exit.value("code", -1));
    }
    next = std::max(next, batch.value("next", next));
    return batch.value("complete", false);
  }

  void pollLoop() {
    const int timeout = connection_->options().request_timeout_ms;
    const std::string base = "/agent/v1/workloads/" + id_ + "/reports?after=";
    int64_t next = 0;
    bool outage = false;
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (abandon_) break;
      }
      auto batch = connection_->call(
          "GET", base + std::to_string(next) + "&wait_ms=" + std::to_string(kPollWaitMs), nullptr,
          timeout + kPollWaitMs);
      if (!batch.isOk()) {
        if (batch.status().code() == StatusCode::kNotFound) {
          // The agent forgot it (it restarted): its ranks are gone.
          core::logWarn("remote workload " + id_ + ": " + batch.status().message());
          finishMissingExits("the agent no longer knows workload " + id_ + " (did it restart?)");
          break;
        }
        if (!outage) {
          outage = true;
          core::logWarn("remote workload " + id_ + ": " + batch.status().message());
          listener_->onEvent(-1, nowRunMs(), "agent_unreachable",
                             {{"agent", connection_->url()}, {"error", batch.status().message()}});
        }
        std::unique_lock lock(mu_);
        if (give_up_at_ns_ != 0 && core::steadyNowNs() >= give_up_at_ns_) break;
        cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return abandon_; });
        continue;
      }
      if (outage) {
        outage = false;
        listener_->onEvent(-1, nowRunMs(), "agent_reachable", {{"agent", connection_->url()}});
      }
      bool complete = false;
      try {
        complete = deliver(*batch, next);
      } catch (const json::exception& e) {
        // A malformed answer must not kill the controller; skip it and keep polling.
        core::logError("remote workload " + id_ + ": malformed reports: " + e.what());
        if (auto n = batch->find("next"); n != batch->end() && n->is_number_integer()) {
          next = std::max(next, n->get<int64_t>());
        }
      }
      if (complete) {
        // Acknowledge: the agent forgets the workload once asked for what follows the end.
        (void)connection_->call("GET", base + std::to_string(next) + "&wait_ms=0");
        break;
      }
    }
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  const std::shared_ptr<Connection> connection_;
  const std::string id_;
  const std::vector<int> ranks_;
  const int64_t origin_ns_;
  WorkloadListener* const listener_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> exited_;
  int64_t give_up_at_ns_ = 0;  // 0 = keep retrying
  bool abandon_ = false;
  bool done_ = false;
  std::thread poller_;

  std::mutex stop_mu_;
  bool stopped_ = false;
};

class RemoteAgent : public Agent {
 public:
  explicit RemoteAgent(RemoteAgentOptions options)
      : connection_(std::make_shared<Connection>(std::move(options))) {
    renewer_ = std::thread([this] { renewLoop(); });
  }

  // Faults still applied are not reverted here: without renewals the agent reverts them when
  // their leases expire.
  ~RemoteAgent() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (renewer_.joinable()) renewer_.join();
  }

  core::Result<AgentInfo> info() override {
    const int timeout = connection_->options().info_timeout_ms;
    auto answer = connection_->call("GET", "/agent/v1/describe", nullptr, timeout);
    if (!answer.isOk()) return answer.status();
    auto decoded = agentInfoFromJson(*answer);
    if (!decoded.isOk()) {
      return decoded.status().withContext("agent " + connection_->url() +
                                          " (GET /agent/v1/describe)");
    }
    return decoded;
  }

  std::vector<injectors::KindInfo> capabilities() override {
    Status ignored;
    return cachedCapabilities(&ignored);
  }

  Status validateFault(const std::string& kind, const json& params) override {
    Status fetch;
    const auto kinds = cachedCapabilities(&fetch);
    if (kinds.empty() && !fetch.isOk()) return fetch;
    if (std::none_of(kinds.begin(), kinds.end(),
                     [&](const injectors::KindInfo& info) { return info.kind == kind; })) {
      std::string valid;
      for (const auto& info : kinds) valid += (valid.empty() ? "" : ", ") + info.kind;
      return Status(StatusCode::kInvalidArgument, "unknown fault kind \"" + kind + "\" on agent " +
                                                      connection_->url() +
                                                      "; valid kinds: " + valid);
    }
    json body = {{"kind", kind}, {"params", params}};
    auto answer = connection_->call("POST", "/agent/v1/validate", &body);
    return answer.status();
  }

  // The agent captures the prior itself, atomically with the apply, and keeps it in its own
  // journal: a prior read over the network here could be stale by the time the apply lands, and
  // the agent must be able to revert on lease expiry without the controller. So there is nothing
  // for the controller to journal; revertFault works from the fault description alone.
  // It does learn the agent's clock here, before the run's first instant, which a scheduled apply
  // is converted with: a fault whose capture fails to reach its agent fails before any is applied.
  core::Result<json> captureFault(const injectors::Fault& fault) override {
    if (Status s = seedClock(); !s.isOk()) {
      return s.withContext("reaching the agent for " + injectors::describe(fault));
    }
    return json::object();
  }

  // A few quick exchanges, so that the clock offset is known to within half a short round trip.
  Status seedClock() {
    for (int i = connection_->clockSamples(); i < kClockSeedExchanges; ++i) {
      auto ping = connection_->call("GET", "/agent/v1/faults");
      if (!ping.isOk()) return ping.status();
    }
    return Status::ok();
  }

  Status applyFault(const injectors::Fault& fault) override {
    return postFault(fault, std::nullopt);
  }

  // POST /faults (with apply_at_ns when scheduled), keeping the agent's id for renewals and the
  // revert.
  Status postFault(const injectors::Fault& fault, std::optional<int64_t> remote_at_ns) {
    json body = {{"fault", injectors::toJson(fault)},
                 {"lease_ms", connection_->options().lease_ms}};
    if (remote_at_ns) body["apply_at_ns"] = std::max<int64_t>(0, *remote_at_ns);
    const std::string doing = remote_at_ns ? "scheduling " : "applying ";
    auto answer =
        connection_->call("POST", "/agent/v1/faults", &body, connection_->options().act_timeout_ms);
    if (!answer.isOk()) return answer.status().withContext(doing + injectors::describe(fault));
    const std::string id = answer->value("id", "");
    if (id.empty()) {
      return Status(StatusCode::kInternal, "agent " + connection_->url() + " answered " + doing +
                                               injectors::describe(fault) + " without an id");
    }
    std::lock_guard lock(mu_);
    faults_[injectors::faultKey(fault)] = id;
    return Status::ok();
  }

  // The agent's id for a fault this controller applied or scheduled; "" when there is none.
  std::string idOf(const injectors::Fault& fault) {
    std::lock_guard lock(mu_);
    auto it = faults_.find(injectors::faultKey(fault));
    return it != faults_.end() ? it->second : std::string();
  }

  bool appliesOnSchedule() const override { return true; }

  Status scheduleFault(const injectors::Fault& fault, int64_t at_ns) override {
    auto remote_at = connection_->toRemoteNs(at_ns);
    if (!remote_at) {
      // No answer has carried the agent's clock yet (captureFault normally has): ask for it.
      if (Status s = seedClock(); !s.isOk()) {
        return s.withContext("scheduling " + injectors::describe(fault));
      }
      remote_at = connection_->toRemoteNs(at_ns);
      if (!remote_at) {
        return Status(StatusCode::kInternal,
                      "agent " + connection_->url() + " does not say what its clock reads, so " +
                          injectors::describe(fault) + " cannot be scheduled on it");
      }
    }
    return postFault(fault, remote_at);
  }

  core::Result<int64_t> awaitScheduled(const injectors::Fault& fault,
                                       int64_t deadline_ns) override {
    const std::string id = idOf(fault);
    if (id.empty()) {
      return Status(StatusCode::kFailedPrecondition,
                    injectors::describe(fault) + " was not scheduled on " + connection_->url());
    }
    while (true) {
      auto answer = connection_->call("GET", "/agent/v1/faults/" + id + "?observe=0");
      if (!answer.isOk())
        return answer.status().withContext("confirming " + injectors::describe(fault));
      const std::string state = answer->value("state", "");
      if (state == "applied") {
        auto at = answer->find("applied_at_ns");
        if (at == answer->end() || !at->is_number_integer()) {
          return Status(StatusCode::kInternal, "agent " + connection_->url() + " applied " +
                                                   injectors::describe(fault) +
                                                   " without saying when");
        }
        return connection_->toLocalNs(at->get<int64_t>());
      }
      if (state == "failed") {
        std::lock_guard lock(mu_);
        faults_.erase(injectors::faultKey(fault));
        return Status(StatusCode::kInternal, answer->value("error", "the agent's apply failed"));
      }
      const int64_t now = core::steadyNowNs();
      if (now >= deadline_ns) {
        return Status(StatusCode::kTimeout, "agent " + connection_->url() + " had not applied " +
                                                injectors::describe(fault) + " (" + id +
                                                ", state " + state + ") by the deadline");
      }
      // Still waiting for its instant (our clock ahead of the estimate, or a slow agent timer).
      std::this_thread::sleep_for(std::chrono::nanoseconds(
          std::min<int64_t>(deadline_ns - now, int64_t{kConfirmRetryMs} * 1000000)));
    }
  }

  Status scheduleRevert(const injectors::Fault& fault, int64_t at_ns) override {
    const std::string id = idOf(fault);
    auto remote_at = connection_->toRemoteNs(at_ns);
    if (id.empty() || !remote_at) {
      return Status(StatusCode::kFailedPrecondition,
                    injectors::describe(fault) + " has no id or clock on " + connection_->url() +
                        " to schedule its revert with");
    }
    json body = {{"revert_at_ns", std::max<int64_t>(0, *remote_at)}};
    auto answer = connection_->call("POST", "/agent/v1/faults/" + id + "/revert-at", &body,
                                    connection_->options().act_timeout_ms);
    if (!answer.isOk()) {
      return answer.status().withContext("scheduling the revert of " + injectors::describe(fault));
    }
    std::lock_guard lock(mu_);
    reverting_[injectors::faultKey(fault)] = id;
    return Status::ok();
  }

  core::Result<RevertedFault> awaitReverted(const injectors::Fault& fault,
                                            int64_t deadline_ns) override {
    const std::string key = injectors::faultKey(fault);
    std::string id;
    {
      // Not faults_: a renewal answered 404 once the agent had reverted takes the fault out of
      // it, before or while we ask.
      std::lock_guard lock(mu_);
      if (auto it = reverting_.find(key); it != reverting_.end()) id = it->second;
    }
    if (id.empty()) {
      return Status(StatusCode::kFailedPrecondition, "the revert of " + injectors::describe(fault) +
                                                         " was not scheduled on " +
                                                         connection_->url());
    }
    auto forget = [&] {
      std::lock_guard lock(mu_);
      reverting_.erase(key);
      if (auto it = faults_.find(key); it != faults_.end() && it->second == id) {
        faults_.erase(it);  // no more renewals
      }
    };
    while (true) {
      auto answer = connection_->call("GET", "/agent/v1/faults/" + id + "?observe=0");
      if (!answer.isOk() && answer.status().code() == StatusCode::kNotFound) {
        // Gone without a record of its scheduled revert (its lease ran out, or the record was
        // pushed out): reverted all the same.
        forget();
        return RevertedFault{core::steadyNowNs(), json::object()};
      }
      if (!answer.isOk()) {
        return answer.status().withContext("confirming the revert of " +
                                           injectors::describe(fault));
      }
      if (answer->value("state", "") == "reverted") {
        forget();
        RevertedFault done;
        done.reverted_at_ns = connection_->toLocalNs(answer->value("reverted_at_ns", int64_t{0}));
        if (answer->contains("observed")) done.observed = answer->at("observed");
        return done;
      }
      if (answer->contains("revert_error")) {
        // Still held: the caller's revert (DELETE by id) is the retry.
        {
          std::lock_guard lock(mu_);
          reverting_.erase(key);
        }
        return Status(StatusCode::kInternal, answer->value("revert_error", ""));
      }
      const int64_t now = core::steadyNowNs();
      if (now >= deadline_ns) {
        return Status(StatusCode::kTimeout, "agent " + connection_->url() + " had not reverted " +
                                                injectors::describe(fault) + " (" + id +
                                                ") by the deadline");
      }
      std::this_thread::sleep_for(std::chrono::nanoseconds(
          std::min<int64_t>(deadline_ns - now, int64_t{kConfirmRetryMs} * 1000000)));
    }
  }

  Status revertFault(const injectors::Fault& fault, const json&) override {
    std::string id;
    {
      // Never renewed again, whatever happens below: if the revert fails, the lease reverts.
      std::lock_guard lock(mu_);
      auto it = faults_.find(injectors::faultKey(fault));
      if (it != faults_.end()) {
        id = it->second;
        faults_.erase(it);
      }
      reverting_.erase(injectors::faultKey(fault));
    }
    if (!id.empty()) {
      auto answer = connection_->call("DELETE", "/agent/v1/faults/" + id, nullptr,
                                      connection_->options().act_timeout_ms);
      if (answer.isOk()) return Status::ok();
      if (answer.status().code() != StatusCode::kNotFound) {
        return answer.status().withContext("reverting " + injectors::describe(fault));
      }
      // The lease expired or the agent restarted: make sure by description.
    }
    json body = {{"fault", injectors::toJson(fault)}};
    auto answer = connection_->call("POST", "/agent/v1/faults/revert", &body,
                                    connection_->options().act_timeout_ms);
    return answer.status().isOk()
               ? Status::ok()
               : answer.status().withContext("reverting " + injectors::describe(fault));
  }

  core::Result<json> observeFault(const injectors::Fault& fault) override {
    std::string id;
    {
      std::lock_guard lock(mu_);
      auto it = faults_.find(injectors::faultKey(fault));
      if (it != faults_.end()) id = it->second;
    }
    if (!id.empty()) {
      auto answer = connection_->call("GET", "/agent/v1/faults/" + id);
      if (answer.isOk()) return answer->value("observed", json::object());
      if (answer.status().code() != StatusCode::kNotFound) return answer.status();
    }
    json body = {{"fault", injectors::toJson(fault)}};
    auto answer = connection_->call("POST", "/agent/v1/faults/observe", &body);
    if (!answer.isOk()) return answer.status();
    return answer->value("observed", json::object());
  }

  core::Result<std::vector<sys::RdmaPortCounters>> rdmaCounters() override {
    // Asked every telemetry tick: the short info timeout, so that a stalled guest costs a gap in
    // its series, not a stalled sampler.
    auto answer = connection_->call("GET", "/agent/v1/rdma/counters", nullptr,
                                    connection_->options().info_timeout_ms);
    if (!answer.isOk()) return answer.status();
    return rdmaCountersFromJson(*answer);
  }

  core::Result<std::unique_ptr<WorkloadHandle>> startWorkload(const std::vector<RankSpec>& ranks,
                                                              int64_t origin_ns,
                                                              WorkloadListener* listener) override {
    // A few quick exchanges first, so that the first reports are already mapped to our clock.
    if (Status s = seedClock(); !s.isOk()) return s.withContext("starting the workload");
    json specs = json::array();
    std::vector<int> rank_ids;
    for (const auto& spec : ranks) {
      specs.push_back(rankSpecToJson(spec));
      rank_ids.push_back(spec.rank);
    }
    json body = {{"ranks", specs}, {"origin_ns", 0}};
    auto answer = connection_->call("POST", "/agent/v1/workloads", &body);
    if (!answer.isOk()) return answer.status().withContext("starting the workload");
    const std::string id = answer->value("id", "");
    if (id.empty()) {
      return Status(StatusCode::kInternal,
                    "agent " + connection_->url() + " started a workload without an id");
    }
    return std::unique_ptr<WorkloadHandle>(
        std::make_unique<RemoteWorkload>(connection_, id, rank_ids, origin_ns, listener));
  }

 private:
  std::vector<injectors::KindInfo> cachedCapabilities(Status* fetch_status) {
    std::lock_guard lock(caps_mu_);
    const int64_t now = core::steadyNowNs();
    if (caps_fetched_ns_ == 0 || now - caps_fetched_ns_ > kCapabilityTtlNs) {
      auto info = connection_->call("GET", "/agent/v1/info");
      if (info.isOk()) {
        caps_.clear();
        for (const auto& kind : info->value("capabilities", json::array())) {
          caps_.push_back(kindInfoFromJson(kind));
        }
        caps_fetched_ns_ = now;
      } else {
        *fetch_status = info.status();
        core::logWarn("capabilities of " + connection_->url() + ": " + info.status().message());
      }
    }
    return caps_;
  }

  void renewLoop() {
    const auto& options = connection_->options();
    const auto period = std::chrono::milliseconds(std::max<int64_t>(10, options.lease_ms / 3));
    const int timeout = static_cast<int>(std::min<int64_t>(
        options.request_timeout_ms, std::max<int64_t>(100, options.lease_ms / 2)));
    bool failing = false;
    std::unique_lock lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, period, [&] { return stop_; });
      if (stop_) break;
      std::map<std::string, std::string> faults = faults_;
      lock.unlock();
      json body = {{"lease_ms", options.lease_ms}};
      for (const auto& [key, id] : faults) {
        auto answer =
            connection_->call("POST", "/agent/v1/faults/" + id + "/renew", &body, timeout);
        if (answer.isOk()) {
          failing = false;
          continue;
        }
        if (answer.status().code() == StatusCode::kNotFound) {
          std::lock_guard relock(mu_);
          if (auto it = faults_.find(key); it != faults_.end() && it->second == id) {
            faults_.erase(it);  // still ours: not a race with revertFault
            // Expected once a scheduled revert's instant has passed.
            if (reverting_.count(key) == 0) {
              core::logWarn("agent " + connection_->url() + " no longer holds fault " + id + " (" +
                            key + "): " + answer.status().message());
            }
          }
        } else if (!failing) {
          failing = true;
          core::logWarn("cannot renew fault leases on " + connection_->url() + ": " +
                        answer.status().message() + " (the agent reverts them when they expire)");
        }
      }
      lock.lock();
    }
  }

  const std::shared_ptr<Connection> connection_;

  std::mutex caps_mu_;
  std::vector<injectors::KindInfo> caps_;
  int64_t caps_fetched_ns_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, std::string> faults_;  // faultKey -> agent fault id
  // faultKey -> agent fault id, from scheduleRevert until awaitReverted has the outcome.
  std::map<std::string, std::string> reverting_;
  std::thread renewer_;
};

}  // namespace

void ClockOffsetEstimator::add(int64_t send_ns, int64_t remote_ns, int64_t recv_ns) {
  if (recv_ns < send_ns) return;  // not a usable exchange
  const int64_t rtt = recv_ns - send_ns;
  if (samples_ > 0 && rtt > best_rtt_ns_) {
    ++samples_;
    return;
  }
  ++samples_;
  best_rtt_ns_ = rtt;
  offset_ns_ = remote_ns - (send_ns + rtt / 2);
}

std::unique_ptr<Agent> makeRemoteAgent(RemoteAgentOptions options) {
  return std::make_unique<RemoteAgent>(std::move(options));
}

core::Result<json> fetchRemoteAgentInfo(const RemoteAgentOptions& options) {
  Connection connection(options);
  return connection.call("GET", "/agent/v1/info");
}

}  // namespace fabric_chaos::agent
