#include "agent/agent_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "agent/agent_wire.h"
#include "core/clock.h"
#include "core/json_keys.h"
#include "core/log.h"
#include "core/text.h"

namespace fabric_chaos::agent {
namespace {

using core::HttpRequest;
using core::HttpResponse;
using core::Status;
using core::StatusCode;
using nlohmann::json;

constexpr char kPrefix[] = "/agent/v1/";
constexpr size_t kRecentPriors = 256;

std::string dumpJson(const json& doc) {
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

HttpResponse jsonResponse(int status, json body) {
  body["agent_now_ns"] = core::steadyNowNs();
  HttpResponse response;
  response.status = status;
  response.body = dumpJson(body);
  return response;
}

HttpResponse errorResponse(const Status& status) {
  HttpResponse response = core::jsonErrorResponse(status);
  json doc = json::parse(response.body, nullptr, false);
  if (doc.is_object()) {
    doc["agent_now_ns"] = core::steadyNowNs();
    response.body = dumpJson(doc);
  }
  return response;
}

core::Result<json> parseBody(const std::string& body) {
  if (core::trimWhitespace(body).empty()) return json::object();
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded()) {
    return Status(StatusCode::kInvalidArgument, "request body is not valid JSON");
  }
  if (!doc.is_object())
    return Status(StatusCode::kInvalidArgument, "request body must be an object");
  return doc;
}

// Query strings carry only numbers here: no percent-decoding needed.
std::map<std::string, std::string> parseQuery(const std::string& query) {
  std::map<std::string, std::string> out;
  std::istringstream in(query);
  std::string pair;
  while (std::getline(in, pair, '&')) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    out[pair.substr(0, eq)] = eq == std::string::npos ? "" : pair.substr(eq + 1);
  }
  return out;
}

core::Result<int64_t> queryInt(const std::map<std::string, std::string>& query,
                               const std::string& name, int64_t lo, int64_t hi, int64_t fallback) {
  auto it = query.find(name);
  if (it == query.end() || it->second.empty()) return fallback;
  const std::string& text = it->second;
  if (text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      })) {
    return invalid(name, "must be a non-negative integer");
  }
  const int64_t value = std::stoll(text);
  if (value < lo || value > hi) {
    return invalid(name, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return value;
}

core::Result<injectors::Fault> faultField(const json& doc) {
  auto it = doc.find("fault");
  if (it == doc.end()) return invalid("fault", "required");
  auto fault = injectors::faultFromJson(*it);
  if (!fault.isOk()) return Status(fault.status().code(), "fault." + fault.status().message());
  return fault;
}

Status writeFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return core::errnoStatus(errno, "cannot write " + tmp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = core::errnoStatus(errno, "cannot write " + tmp);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = core::errnoStatus(errno, "cannot sync " + tmp);
    ::close(fd);
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return core::errnoStatus(errno, "cannot rename " + tmp + " to " + path);
  }
  return Status::ok();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Free functions

bool constantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

// ---------------------------------------------------------------------------------------------
// AgentService

struct AgentService::Workload {
  std::string id;
  int ranks = 0;
  std::unique_ptr<ReportBuffer> buffer;
  // Declared after the buffer so that it is destroyed first: its reader threads write to it.
  std::unique_ptr<WorkloadHandle> handle;
  std::mutex stop_mu;
  bool stopped = false;

  void stop(int grace_ms) {
    std::lock_guard lock(stop_mu);
    if (!stopped) handle->stop(grace_ms);
    stopped = true;
    buffer->markStopped();
  }
};

AgentService::AgentService(Agent& agent, HostProbe& probe, AgentServiceOptions options)
    : agent_(agent), probe_(probe), options_(std::move(options)) {}

AgentService::~AgentService() {
  {
    std::lock_guard lock(lease_mu_);
    lease_stop_ = true;
  }
  lease_cv_.notify_all();
  if (lease_thread_.joinable()) lease_thread_.join();
  std::map<std::string, std::shared_ptr<Workload>> workloads;
  {
    std::lock_guard lock(workload_mu_);
    workloads.swap(workloads_);
  }
  for (auto& [id, workload] : workloads) {
    workload->buffer->close();
    workload->stop(0);
  }
}

void AgentService::startLeaseThread() {
  std::lock_guard lock(lease_mu_);
  if (lease_thread_.joinable() || lease_stop_) return;
  lease_thread_ = std::thread([this] { leaseLoop(); });
}

void AgentService::leaseLoop() {
  const int64_t check_ns = int64_t{std::max(1, options_.lease_check_ms)} * 1000000;
  int64_t next_check_ns = core::steadyNowNs() + check_ns;
  std::unique_lock lock(lease_mu_);
  while (!lease_stop_) {
    schedule_changed_ = false;
    lock.unlock();
    const int64_t scheduled = nextScheduledNs();
    lock.lock();
    const int64_t wake_ns = scheduled != 0 ? std::min(scheduled, next_check_ns) : next_check_ns;
    // steady_clock is CLOCK_MONOTONIC, the clock apply_at_ns is on.
    const std::chrono::steady_clock::time_point wake{std::chrono::nanoseconds(wake_ns)};
    lease_cv_.wait_until(lock, wake, [&] { return lease_stop_ || schedule_changed_; });
    if (lease_stop_) break;
    if (schedule_changed_) continue;  // an earlier instant may have arrived
    lock.unlock();
    applyDue();
    revertDue();
    const int64_t now = core::steadyNowNs();
    if (now >= next_check_ns) {
      expireLeases();
      next_check_ns = now + check_ns;
    }
    lock.lock();
  }
}

int64_t AgentService::nextScheduledNs() const {
  std::lock_guard lock(fault_mu_);
  int64_t next = 0;
  for (const auto& [id, active] : faults_) {
    const int64_t at =
        active.phase == FaultPhase::kScheduled ? active.apply_at_ns : active.revert_at_ns;
    if (at != 0 && (next == 0 || at < next)) next = at;
  }
  return next;
}

namespace {
// Keeps `map` to the last kRecentPriors ids given in `order`.
template <typename Value>
void rememberBounded(std::map<std::string, Value>& map, std::vector<std::string>& order,
                     const std::string& id, Value value) {
  if (map.count(id) == 0) order.push_back(id);
  map[id] = std::move(value);
  while (order.size() > kRecentPriors) {
    map.erase(order.front());
    order.erase(order.begin());
  }
}
}  // namespace

int AgentService::revertDue() {
  std::lock_guard lock(fault_mu_);
  const int64_t now = core::steadyNowNs();
  std::vector<std::string> due;  // oldest first
  for (auto it = faults_.rbegin(); it != faults_.rend(); ++it) {
    const ActiveFault& active = it->second;
    if (active.phase == FaultPhase::kApplied && active.revert_at_ns != 0 &&
        active.revert_at_ns <= now) {
      due.push_back(it->first);
    }
  }
  int reverted = 0;
  for (const std::string& id : due) {
    ActiveFault& active = faults_.at(id);
    json observed = json::object();
    if (auto o = agent_.observeFault(active.fault); o.isOk()) observed = o.value();
    const int64_t late_ns = core::steadyNowNs() - active.revert_at_ns;
    Status status = revertLocked(
        active, "its scheduled instant, " + std::to_string(late_ns / 1000) + " us late");
    if (!status.isOk()) {
      // The controller hears it on its next GET and reverts the usual way; the lease still
      // bounds the fault if it does not.
      active.revert_at_ns = 0;
      active.revert_error =
          status.withContext("reverting " + injectors::describe(active.fault)).message();
      core::logError("agent: scheduled revert of " + id + " failed: " + active.revert_error);
      continue;
    }
    rememberBounded(reverted_schedules_, reverted_order_, id,
                    RevertedRecord{core::steadyNowNs(), std::move(observed)});
    faults_.erase(id);
    ++reverted;
  }
  if (reverted > 0) {
    if (Status s = persistLocked(); !s.isOk()) {
      core::logError("agent: cannot rewrite the journal: " + s.toString());
    }
  }
  return reverted;
}

int AgentService::applyDue() {
  std::lock_guard lock(fault_mu_);
  const int64_t now = core::steadyNowNs();
  std::vector<std::string> due;  // oldest first: faults_ holds the newest first
  for (auto it = faults_.rbegin(); it != faults_.rend(); ++it) {
    if (it->second.phase == FaultPhase::kScheduled && it->second.apply_at_ns <= now) {
      due.push_back(it->first);
    }
  }
  int applied = 0;
  bool changed = false;
  for (const std::string& id : due) {
    ActiveFault& active = faults_.at(id);
    const int64_t late_ns = core::steadyNowNs() - active.apply_at_ns;
    Status status = agent_.applyFault(active.fault);
    if (status.isOk()) {
      active.phase = FaultPhase::kApplied;
      active.applied_at_ns = core::steadyNowNs();
      ++applied;
      core::logInfo("agent: applied " + id + " (" + injectors::describe(active.fault) + ") " +
                    std::to_string(late_ns / 1000) + " us after its instant, lease " +
                    std::to_string(active.lease_ms) + " ms");
      continue;
    }
    const std::string error =
        status.withContext("applying " + injectors::describe(active.fault)).message();
    core::logError("agent: scheduled " + id + " failed: " + error);
    rememberBounded(failed_schedules_, failed_order_, id, error);
    // It may be half-applied: put back what was there, or leave it to the lease manager.
    if (Status r = agent_.revertFault(active.fault, active.prior); !r.isOk()) {
      core::logError("agent: and so did the revert: " + r.toString() +
                     "; the lease manager keeps trying");
      active.phase = FaultPhase::kApplied;
      active.lease_deadline_ns = 0;
    } else {
      faults_.erase(id);
      changed = true;
    }
  }
  if (changed) {
    if (Status s = persistLocked(); !s.isOk()) {
      core::logError("agent: cannot rewrite the journal: " + s.toString());
    }
  }
  return applied;
}

json AgentService::faultStateLocked(const ActiveFault& active) const {
  json doc = {{"id", active.id},
              {"prior", active.prior},
              {"lease_ms", active.lease_ms},
              {"lease_deadline_ns", active.lease_deadline_ns}};
  if (active.phase == FaultPhase::kScheduled) {
    doc["state"] = "scheduled";
    doc["apply_at_ns"] = active.apply_at_ns;
  } else {
    doc["state"] = "applied";
    doc["applied_at_ns"] = active.applied_at_ns;
  }
  if (active.revert_at_ns != 0) doc["revert_at_ns"] = active.revert_at_ns;
  if (!active.revert_error.empty()) doc["revert_error"] = active.revert_error;
  return doc;
}

size_t AgentService::activeFaults() const {
  std::lock_guard lock(fault_mu_);
  return faults_.size();
}

bool AgentService::NewestFirst::operator()(const std::string& a, const std::string& b) const {
  // "f-12" after "f-9" is newer; ids that are not f-N (none are made) sort after, by text.
  auto number = [](const std::string& id) -> int64_t {
    if (id.size() < 3 || id.compare(0, 2, "f-") != 0) return -1;
    int64_t n = 0;
    for (size_t i = 2; i < id.size(); ++i) {
      if (id[i] < '0' || id[i] > '9' || n > (INT64_MAX - 9) / 10) return -1;
      n = n * 10 + (id[i] - '0');
    }
    return n;
  };
  const int64_t na = number(a);
  const int64_t nb = number(b);
  if (na != nb) return na > nb;
  return a < b;
}

AgentService::ActiveFault* AgentService::findByTarget(const injectors::Fault& fault) {
  const std::string key = injectors::faultKey(fault);
  for (auto& [id, active] : faults_) {
    if (injectors::faultKey(active.fault) == key) return &active;
  }
  return nullptr;
}

void AgentService::rememberPriorLocked(const injectors::Fault& fault, const json& prior) {
  const std::string key = injectors::faultKey(fault);
  if (recent_priors_.count(key) == 0) recent_order_.push_back(key);
  recent_priors_[key] = prior;
  while (recent_order_.size() > kRecentPriors) {
    recent_priors_.erase(recent_order_.front());
    recent_order_.erase(recent_order_.begin());
  }
}

Status AgentService::revertLocked(const ActiveFault& active, const std::string& why) {
  Status status = agent_.revertFault(active.fault, active.prior);
  if (status.isOk()) {
    rememberPriorLocked(active.fault, active.prior);
    core::logInfo("agent: reverted " + active.id + " (" + injectors::describe(active.fault) +
                  "): " + why);
  }
  return status;
}

Status AgentService::persistLocked() {
  if (options_.journal_path.empty()) return Status::ok();
  json faults = json::array();
  for (const auto& [id, active] : faults_) {
    faults.push_back({{"id", id},
                      {"fault", injectors::toJson(active.fault)},
                      {"prior", active.prior},
                      {"lease_ms", active.lease_ms}});
  }
  json doc = {{"version", 1}, {"next_fault_id", next_fault_id_}, {"faults", faults}};
  return writeFileAtomically(options_.journal_path, dumpJson(doc) + "\n");
}

AgentService::Recovery AgentService::recoverJournal() {
  Recovery recovery;
  if (options_.journal_path.empty()) return recovery;
  std::ifstream in(options_.journal_path);
  if (!in) return recovery;  // first start
  std::ostringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  std::lock_guard lock(fault_mu_);
  if (!doc.is_object()) {
    core::logError("agent: the journal " + options_.journal_path +
                   " is not valid JSON; faults a previous agent left behind cannot be reverted "
                   "from it (kept as " +
                   options_.journal_path + ".corrupt)");
    std::error_code ec;
    std::filesystem::rename(options_.journal_path, options_.journal_path + ".corrupt", ec);
    ++recovery.failed;
    return recovery;
  }
  if (auto next = doc.find("next_fault_id"); next != doc.end() && next->is_number_integer()) {
    next_fault_id_ = std::max(next_fault_id_, next->get<int64_t>());
  }
  const int64_t now = core::steadyNowNs();
  json entries = doc.value("faults", json::array());
  if (!entries.is_array()) entries = json::array();
  // Newest first, whatever order the file lists them in (older agents wrote them oldest first).
  std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    auto id = [](const json& e) {
      return e.is_object() && e.contains("id") && e["id"].is_string() ? e["id"].get<std::string>()
                                                                      : std::string();
    };
    return NewestFirst{}(id(a), id(b));
  });
  for (const auto& entry : entries) {
    if (!entry.is_object()) {
      ++recovery.failed;
      continue;
    }
    auto fault = injectors::faultFromJson(entry.value("fault", json()));
    if (!fault.isOk()) {
      core::logError("agent: journal entry " + dumpJson(entry) +
                     " is unreadable: " + fault.status().message());
      ++recovery.failed;
      continue;
    }
    ActiveFault active;
    auto id = entry.find("id");
    active.id = id != entry.end() && id->is_string() ? id->get<std::string>()
                                                     : "f-" + std::to_string(next_fault_id_++);
    active.fault = fault.value();
    active.prior = entry.value("prior", json::object());
    active.lease_ms = entry.value("lease_ms", options_.default_lease_ms);
    Status status = revertLocked(active, "left applied by a previous agent process");
    if (status.isOk()) {
      ++recovery.reverted;
      continue;
    }
    ++recovery.failed;
    core::logError("agent: cannot revert " + active.id + " (" + injectors::describe(active.fault) +
                   ") left by a previous agent process: " + status.toString() +
                   "; retrying every " + std::to_string(options_.revert_retry_ms) + " ms");
    active.lease_deadline_ns = now;  // expired: the lease manager keeps trying
    active.retry_at_ns = now + int64_t{options_.revert_retry_ms} * 1000000;
    faults_[active.id] = active;
  }
  if (Status s = persistLocked(); !s.isOk()) {
    core::logError("agent: cannot rewrite the journal: " + s.toString());
  }
  return recovery;
}

int AgentService::expireLeases() {
  int reverted = 0;
  std::lock_guard lock(fault_mu_);
  const int64_t now = core::steadyNowNs();
  bool changed = false;
  for (auto it = faults_.begin(); it != faults_.end();) {
    ActiveFault& active = it->second;
    if (active.phase == FaultPhase::kScheduled || active.lease_deadline_ns > now ||
        active.retry_at_ns > now) {
      ++it;
      continue;
    }
    const int64_t late_ms = (now - active.lease_deadline_ns) / 1000000;
    Status status = revertLocked(active, "lease of " + std::to_string(active.lease_ms) +
                                             " ms expired " + std::to_string(late_ms) +
                                             " ms ago (the controller stopped renewing it)");
    if (status.isOk()) {
      ++reverted;
      changed = true;
      it = faults_.erase(it);
      continue;
    }
    core::logError("agent: lease of " + active.id + " (" + injectors::describe(active.fault) +
                   ") expired but the revert failed: " + status.toString() + "; retrying in " +
                   std::to_string(options_.revert_retry_ms) + " ms");
    active.retry_at_ns = now + int64_t{options_.revert_retry_ms} * 1000000;
    ++it;
  }
  if (changed) {
    if (Status s = persistLocked(); !s.isOk()) {
      core::logError("agent: cannot rewrite the journal: " + s.toString());
    }
  }
  return reverted;
}

int AgentService::shutdown(int workload_grace_ms) {
  shutting_down_ = true;
  {
    std::lock_guard lock(lease_mu_);
    lease_stop_ = true;
  }
  lease_cv_.notify_all();
  if (lease_thread_.joinable()) lease_thread_.join();

  std::vector<std::shared_ptr<Workload>> workloads;
  {
    std::lock_guard lock(workload_mu_);
    for (auto& [id, workload] : workloads_) workloads.push_back(workload);
  }
  for (auto& workload : workloads) {
    workload->stop(workload_grace_ms);
    workload->buffer->close();
  }

  int failed = 0;
  std::lock_guard lock(fault_mu_);
  for (auto it = faults_.begin(); it != faults_.end();) {
    if (it->second.phase == FaultPhase::kScheduled) {
      core::logInfo("agent: cancelled " + it->first + " (" + injectors::describe(it->second.fault) +
                    "): shutting down before its instant");
      it = faults_.erase(it);
      continue;
    }
    Status status = revertLocked(it->second, "agent shutting down");
    if (status.isOk()) {
      it = faults_.erase(it);
    } else {
      ++failed;
      core::logError("agent: cannot revert " + it->first + " (" +
                     injectors::describe(it->second.fault) + ") on shutdown: " + status.toString() +
                     "; the next agent start retries it from the journal");
      ++it;
    }
  }
  if (Status s = persistLocked(); !s.isOk()) {
    core::logError("agent: cannot rewrite the journal: " + s.toString());
  }
  return failed;
}

// ---------------------------------------------------------------------------------------------
// HTTP

HttpResponse AgentService::handle(const HttpRequest& request) {
  bool authorized = false;
  if (auto it = request.headers.find("authorization"); it != request.headers.end()) {
    const std::string& value = it->second;
    constexpr std::string_view kScheme = "bearer ";
    if (value.size() > kScheme.size() &&
        std::equal(kScheme.begin(), kScheme.end(), value.begin(), [](char a, char b) {
          return a == std::tolower(static_cast<unsigned char>(b));
        })) {
      const std::string presented = core::trimWhitespace(value.substr(kScheme.size()));
      authorized = !options_.token.empty() && constantTimeEquals(presented, options_.token);
    }
  }
  if (!authorized) {
    HttpResponse response = errorResponse(
        Status(StatusCode::kUnauthenticated,
               "missing or wrong agent token: send \"Authorization: Bearer <token>\""));
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"fabric-chaos-agent\"");
    return response;
  }
  try {
    return route(request);
  } catch (const json::exception& e) {
    return errorResponse(
        Status(StatusCode::kInvalidArgument, std::string("malformed request: ") + e.what()));
  }
}

HttpResponse AgentService::route(const HttpRequest& request) {
  const size_t question = request.target.find('?');
  const std::string path = request.target.substr(0, question);
  const std::string query =
      question == std::string::npos ? "" : request.target.substr(question + 1);
  if (path.rfind(kPrefix, 0) != 0) {
    return errorResponse(Status(StatusCode::kNotFound, "no such path " + path));
  }
  std::vector<std::string> parts;
  {
    std::istringstream in(path.substr(sizeof(kPrefix) - 1));
    std::string part;
    while (std::getline(in, part, '/')) {
      if (!part.empty()) parts.push_back(part);
    }
  }
  const std::string& method = request.method;
  auto notAllowed = [&](const std::string& allow) {
    HttpResponse response = errorResponse(
        Status(StatusCode::kInvalidArgument, "method " + method + " is not allowed on " + path));
    response.status = 405;
    response.headers.emplace_back("Allow", allow);
    return response;
  };
  const size_t n = parts.size();
  if (n == 1 && parts[0] == "info") return method == "GET" ? info() : notAllowed("GET");
  if (n == 1 && parts[0] == "describe") return method == "GET" ? describe() : notAllowed("GET");
  if (n == 1 && parts[0] == "validate") {
    return method == "POST" ? validate(request.body) : notAllowed("POST");
  }
  if (n >= 1 && parts[0] == "faults") {
    if (n == 1) {
      if (method == "GET") return listFaults();
      if (method == "POST") return applyFault(request.body);
      return notAllowed("GET, POST");
    }
    if (n == 2 && parts[1] == "revert") {
      return method == "POST" ? revertByDescription(request.body) : notAllowed("POST");
    }
    if (n == 2 && parts[1] == "observe") {
      return method == "POST" ? observeByDescription(request.body) : notAllowed("POST");
    }
    if (n == 2) {
      if (method == "GET") return getFault(parts[1], query);
      if (method == "DELETE") return deleteFault(parts[1]);
      return notAllowed("GET, DELETE");
    }
    if (n == 3 && parts[2] == "renew") {
      return method == "POST" ? renewFault(parts[1], request.body) : notAllowed("POST");
    }
    if (n == 3 && parts[2] == "revert-at") {
      return method == "POST" ? scheduleRevert(parts[1], request.body) : notAllowed("POST");
    }
  }
  if (n == 2 && parts[0] == "rdma" && parts[1] == "counters") {
    return method == "GET" ? rdmaCounters() : notAllowed("GET");
  }
  if (n >= 1 && parts[0] == "workloads") {
    if (n == 1) return method == "POST" ? startWorkload(request.body) : notAllowed("POST");
    if (n == 2) return method == "DELETE" ? stopWorkload(parts[1], query) : notAllowed("DELETE");
    if (n == 3 && parts[2] == "reports") {
      return method == "GET" ? workloadReports(parts[1], query) : notAllowed("GET");
    }
  }
  return errorResponse(Status(StatusCode::kNotFound, "no such path " + path));
}

HttpResponse AgentService::info() {
  json capabilities = json::array();
  for (const auto& kind : agent_.capabilities()) capabilities.push_back(kindInfoToJson(kind));
  json netdevs = json::array();
  for (const auto& dev : probe_.netdevs()) {
    netdevs.push_back({{"name", dev.name},
                       {"address", dev.address},
                       {"mac", dev.mac},
                       {"operstate", dev.operstate},
                       {"mtu", dev.mtu}});
  }
  json rdma = json::array();
  for (const auto& port : probe_.rdmaPorts()) {
    rdma.push_back({{"name", port.name},
                    {"port", port.port},
                    {"state", port.state},
                    {"gid", port.gid},
                    {"netdev", port.netdev}});
  }
  size_t workloads = 0;
  {
    std::lock_guard lock(workload_mu_);
    workloads = workloads_.size();
  }
  const std::string hostname = probe_.hostname();
  return jsonResponse(200, {{"agent_id", options_.agent_id.empty() ? hostname : options_.agent_id},
                            {"hostname", hostname},
                            {"version", options_.version},
                            {"kernel", probe_.kernelRelease()},
                            {"capabilities", capabilities},
                            {"netdevs", netdevs},
                            {"rdma_devices", rdma},
                            {"allowed_interfaces", options_.allowed_interfaces},
                            {"management_interfaces", options_.management_interfaces},
                            {"leases", activeFaults()},
                            {"workloads", workloads}});
}

HttpResponse AgentService::rdmaCounters() {
  auto counters = agent_.rdmaCounters();
  if (!counters.isOk()) return errorResponse(counters.status());
  return jsonResponse(200, rdmaCountersToJson(*counters));
}

HttpResponse AgentService::describe() {
  auto described = agent_.info();
  if (!described.isOk()) return errorResponse(described.status());
  if (described->version.empty()) described->version = options_.version;
  if (described->hostname.empty()) described->hostname = probe_.hostname();
  return jsonResponse(200, agentInfoToJson(*described));
}

HttpResponse AgentService::listFaults() {
  json faults = json::array();
  std::lock_guard lock(fault_mu_);
  for (const auto& [id, active] : faults_) {
    json entry = faultStateLocked(active);
    entry["fault"] = injectors::toJson(active.fault);
    faults.push_back(std::move(entry));
  }
  return jsonResponse(200, {{"faults", faults}});
}

HttpResponse AgentService::applyFault(const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"fault", "lease_ms", "apply_at_ns"}); !s.isOk()) {
    return errorResponse(s);
  }
  auto fault = faultField(*doc);
  if (!fault.isOk()) return errorResponse(fault.status());
  auto lease_ms = intField(*doc, "lease_ms", 1, options_.max_lease_ms, options_.default_lease_ms);
  if (!lease_ms.isOk()) return errorResponse(lease_ms.status());
  auto apply_at_ns = intField(*doc, "apply_at_ns", 0, std::numeric_limits<int64_t>::max(), 0);
  if (!apply_at_ns.isOk()) return errorResponse(apply_at_ns.status());
  const int64_t received_ns = core::steadyNowNs();
  if (Status s = checkNotTooFarAhead("apply_at_ns", *apply_at_ns, received_ns); !s.isOk()) {
    return errorResponse(s);
  }
  // An instant already past (a late delivery) is applied at once, as an apply without one.
  const bool scheduled = *apply_at_ns > received_ns;
  if (shutting_down_) {
    return errorResponse(Status(StatusCode::kUnavailable, "the agent is shutting down"));
  }
  if (Status s = checkTargetAllowed(fault->target, options_.allowed_interfaces,
                                    options_.management_interfaces, true, kRestartWithAllow,
                                    options_.rdma_netdev);
      !s.isOk()) {
    core::logWarn("agent: refused " + injectors::describe(*fault) + ": " + s.message());
    return errorResponse(s);
  }

  std::unique_lock lock(fault_mu_);
  if (ActiveFault* existing = findByTarget(*fault)) {
    if (existing->fault.params != fault->params) {
      return errorResponse(Status(StatusCode::kFailedPrecondition,
                                  injectors::describe(*fault) + " is already active as " +
                                      existing->id + " with other parameters " +
                                      existing->fault.params.dump() + "; revert it first"));
    }
    // The same fault again (a retried request): one fault, the lease extended.
    existing->lease_ms = *lease_ms;
    existing->lease_deadline_ns =
        std::max(core::steadyNowNs(), existing->apply_at_ns) + *lease_ms * 1000000;
    json answer = faultStateLocked(*existing);
    answer["existing"] = true;
    return jsonResponse(200, answer);
  }
  if (Status s = agent_.validateFault(fault->kind, fault->params); !s.isOk()) {
    return errorResponse(s);
  }
  auto prior = agent_.captureFault(*fault);
  if (!prior.isOk()) {
    return errorResponse(
        prior.status().withContext("reading state before " + injectors::describe(*fault)));
  }
  ActiveFault active;
  active.id = "f-" + std::to_string(next_fault_id_++);
  active.fault = *fault;
  active.prior = prior.value();
  active.lease_ms = *lease_ms;
  // A scheduled fault's lease runs from its instant: the controller renews it from then on.
  active.lease_deadline_ns = (scheduled ? *apply_at_ns : core::steadyNowNs()) + *lease_ms * 1000000;
  if (scheduled) {
    active.phase = FaultPhase::kScheduled;
    active.apply_at_ns = *apply_at_ns;
  }
  faults_[active.id] = active;
  // Intent first: if this process dies between here and the revert, the next start finds it.
  if (Status s = persistLocked(); !s.isOk()) {
    faults_.erase(active.id);
    return errorResponse(Status(StatusCode::kInternal, "cannot journal " +
                                                           injectors::describe(*fault) +
                                                           " before applying "
                                                           "it, so it was not applied: " +
                                                           s.message()));
  }
  if (scheduled) {
    const json answer = faultStateLocked(active);
    lock.unlock();
    {
      std::lock_guard wake(lease_mu_);
      schedule_changed_ = true;
    }
    lease_cv_.notify_all();
    core::logInfo("agent: scheduled " + active.id + " (" + injectors::describe(*fault) + ") in " +
                  std::to_string((*apply_at_ns - received_ns) / 1000000) + " ms");
    return jsonResponse(202, answer);
  }
  Status applied = agent_.applyFault(*fault);
  if (!applied.isOk()) {
    // It may be half-applied: put back what was there.
    if (Status r = agent_.revertFault(*fault, active.prior); !r.isOk()) {
      core::logError("agent: applying " + injectors::describe(*fault) +
                     " failed and so did the revert: " + r.toString() +
                     "; the lease manager keeps trying");
      faults_[active.id].lease_deadline_ns = 0;
    } else {
      faults_.erase(active.id);
    }
    (void)persistLocked();
    return errorResponse(applied.withContext("applying " + injectors::describe(*fault)));
  }
  ActiveFault& stored = faults_[active.id];
  stored.applied_at_ns = core::steadyNowNs();
  stored.lease_deadline_ns = stored.applied_at_ns + *lease_ms * 1000000;
  core::logInfo("agent: applied " + stored.id + " (" + injectors::describe(stored.fault) +
                "), lease " + std::to_string(*lease_ms) + " ms");
  return jsonResponse(201, faultStateLocked(stored));
}

HttpResponse AgentService::renewFault(const std::string& id, const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"lease_ms"}); !s.isOk()) return errorResponse(s);
  std::lock_guard lock(fault_mu_);
  auto it = faults_.find(id);
  const int64_t now = core::steadyNowNs();
  if (it == faults_.end()) {
    return errorResponse(Status(StatusCode::kNotFound,
                                "no active fault " + id + " (reverted, or its lease expired)"));
  }
  if (it->second.lease_deadline_ns <= now) {
    return errorResponse(Status(StatusCode::kNotFound,
                                "the lease of " + id + " expired " +
                                    std::to_string((now - it->second.lease_deadline_ns) / 1000000) +
                                    " ms ago; it is being reverted"));
  }
  auto lease_ms = intField(*doc, "lease_ms", 1, options_.max_lease_ms, it->second.lease_ms);
  if (!lease_ms.isOk()) return errorResponse(lease_ms.status());
  it->second.lease_ms = *lease_ms;
  // Renewed before its instant, a scheduled fault's lease still runs from the instant.
  it->second.lease_deadline_ns = std::max(now, it->second.apply_at_ns) + *lease_ms * 1000000;
  return jsonResponse(200, {{"id", id},
                            {"lease_ms", it->second.lease_ms},
                            {"lease_deadline_ns", it->second.lease_deadline_ns}});
}

Status AgentService::checkNotTooFarAhead(const std::string& field, int64_t at_ns,
                                         int64_t now_ns) const {
  if (at_ns - now_ns <= options_.max_schedule_ahead_ms * 1000000) return Status::ok();
  return invalid(field, "is " + std::to_string((at_ns - now_ns) / 1000000) +
                            " ms ahead of this agent's clock; at most " +
                            std::to_string(options_.max_schedule_ahead_ms) + " ms is accepted");
}

HttpResponse AgentService::scheduleRevert(const std::string& id, const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"revert_at_ns"}); !s.isOk()) return errorResponse(s);
  auto revert_at_ns = intField(*doc, "revert_at_ns", 0, std::numeric_limits<int64_t>::max(), -1);
  if (!revert_at_ns.isOk()) return errorResponse(revert_at_ns.status());
  if (*revert_at_ns < 0) return errorResponse(invalid("revert_at_ns", "is required"));
  if (Status s = checkNotTooFarAhead("revert_at_ns", *revert_at_ns, core::steadyNowNs());
      !s.isOk()) {
    return errorResponse(s);
  }
  json answer;
  {
    std::lock_guard lock(fault_mu_);
    auto it = faults_.find(id);
    if (it == faults_.end()) {
      return errorResponse(
          Status(StatusCode::kNotFound, "no active fault " + id + " (already reverted?)"));
    }
    // An instant already past is taken as "now": the lease thread reverts it on waking.
    it->second.revert_at_ns = std::max<int64_t>(*revert_at_ns, 1);
    it->second.revert_error.clear();
    answer = faultStateLocked(it->second);
    answer.erase("prior");
  }
  {
    std::lock_guard wake(lease_mu_);
    schedule_changed_ = true;
  }
  lease_cv_.notify_all();
  return jsonResponse(202, answer);
}

HttpResponse AgentService::getFault(const std::string& id, const std::string& query) {
  const auto params = parseQuery(query);
  auto observe = queryInt(params, "observe", 0, 1, 1);
  if (!observe.isOk()) return errorResponse(observe.status());
  std::lock_guard lock(fault_mu_);
  auto it = faults_.find(id);
  if (it == faults_.end()) {
    if (auto done = reverted_schedules_.find(id); done != reverted_schedules_.end()) {
      // Reverted at its scheduled instant.
      return jsonResponse(200, {{"id", id},
                                {"state", "reverted"},
                                {"reverted_at_ns", done->second.reverted_at_ns},
                                {"observed", done->second.observed}});
    }
    if (auto failed = failed_schedules_.find(id); failed != failed_schedules_.end()) {
      // Its instant came and the apply failed: nothing of it is left on the host.
      return jsonResponse(200, {{"id", id}, {"state", "failed"}, {"error", failed->second}});
    }
    return errorResponse(Status(StatusCode::kNotFound, "no active fault " + id));
  }
  json answer = faultStateLocked(it->second);
  answer["fault"] = injectors::toJson(it->second.fault);
  answer.erase("prior");
  if (*observe == 1 && it->second.phase == FaultPhase::kApplied) {
    auto observed = agent_.observeFault(it->second.fault);
    if (!observed.isOk()) return errorResponse(observed.status());
    answer["observed"] = observed.value();
  }
  return jsonResponse(200, answer);
}

HttpResponse AgentService::deleteFault(const std::string& id) {
  std::lock_guard lock(fault_mu_);
  auto it = faults_.find(id);
  if (it == faults_.end()) {
    return errorResponse(
        Status(StatusCode::kNotFound, "no active fault " + id + " (already reverted?)"));
  }
  if (it->second.phase == FaultPhase::kScheduled) {
    // Its instant has not come: nothing was changed, so nothing is put back.
    core::logInfo("agent: cancelled " + id + " (" + injectors::describe(it->second.fault) +
                  ") before its instant");
    faults_.erase(it);
    if (Status s = persistLocked(); !s.isOk()) {
      core::logError("agent: cannot rewrite the journal: " + s.toString());
    }
    return jsonResponse(200, {{"id", id}, {"reverted", true}, {"cancelled", true}});
  }
  json observed;
  if (auto o = agent_.observeFault(it->second.fault); o.isOk()) {
    observed = o.value();
  } else {
    observed = {{"error", o.status().message()}};
  }
  if (Status s = revertLocked(it->second, "controller request"); !s.isOk()) {
    return errorResponse(s.withContext("reverting " + id));
  }
  faults_.erase(it);
  if (Status s = persistLocked(); !s.isOk()) {
    core::logError("agent: cannot rewrite the journal: " + s.toString());
  }
  return jsonResponse(200, {{"id", id}, {"reverted", true}, {"observed", observed}});
}

HttpResponse AgentService::revertByDescription(const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"fault"}); !s.isOk()) return errorResponse(s);
  auto fault = faultField(*doc);
  if (!fault.isOk()) return errorResponse(fault.status());
  std::lock_guard lock(fault_mu_);
  if (ActiveFault* active = findByTarget(*fault)) {
    const std::string id = active->id;
    if (Status s = revertLocked(*active, "controller request (by description)"); !s.isOk()) {
      return errorResponse(s.withContext("reverting " + id));
    }
    faults_.erase(id);
    if (Status s = persistLocked(); !s.isOk()) {
      core::logError("agent: cannot rewrite the journal: " + s.toString());
    }
    return jsonResponse(200, {{"reverted", "active"}, {"id", id}});
  }
  auto known = recent_priors_.find(injectors::faultKey(*fault));
  const bool have_prior = known != recent_priors_.end();
  // A fault with a recent prior was applied here, so its target was allowed; asking again could
  // refuse it for what the fault itself did (rdma_device_remove: the device, which the lookup of
  // its netdev needs, is gone).
  if (Status s = have_prior ? Status::ok()
                            : checkTargetAllowed(fault->target, options_.allowed_interfaces,
                                                 options_.management_interfaces, true,
                                                 kRestartWithAllow, options_.rdma_netdev);
      !s.isOk()) {
    // The agent never applies a fault there, so there is nothing to put back.
    return jsonResponse(200, {{"reverted", "none"}, {"reason", s.message()}});
  }
  const json prior = have_prior ? known->second : json::object();
  if (Status s = agent_.revertFault(*fault, prior); !s.isOk()) {
    return errorResponse(s.withContext("reverting " + injectors::describe(*fault)));
  }
  core::logInfo("agent: reverted " + injectors::describe(*fault) + " by description (" +
                (have_prior ? "with its captured prior" : "to the default state") + ")");
  return jsonResponse(200, {{"reverted", have_prior ? "recent_prior" : "default"}});
}

HttpResponse AgentService::observeByDescription(const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"fault"}); !s.isOk()) return errorResponse(s);
  auto fault = faultField(*doc);
  if (!fault.isOk()) return errorResponse(fault.status());
  std::lock_guard lock(fault_mu_);
  auto observed = agent_.observeFault(*fault);
  if (!observed.isOk()) return errorResponse(observed.status());
  json body_out = {{"observed", observed.value()}};
  if (ActiveFault* active = findByTarget(*fault)) body_out["id"] = active->id;
  return jsonResponse(200, body_out);
}

HttpResponse AgentService::validate(const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"kind", "params"}); !s.isOk()) return errorResponse(s);
  auto kind = doc->find("kind");
  if (kind == doc->end() || !kind->is_string()) {
    return errorResponse(invalid("kind", "required, a string"));
  }
  json params = doc->value("params", json::object());
  if (Status s = agent_.validateFault(kind->get<std::string>(), params); !s.isOk()) {
    return errorResponse(s);
  }
  return jsonResponse(200, {{"valid", true}});
}

std::shared_ptr<AgentService::Workload> AgentService::findWorkload(const std::string& id) {
  std::lock_guard lock(workload_mu_);
  auto it = workloads_.find(id);
  return it == workloads_.end() ? nullptr : it->second;
}

HttpResponse AgentService::startWorkload(const std::string& body) {
  auto doc = parseBody(body);
  if (!doc.isOk()) return errorResponse(doc.status());
  if (Status s = onlyFields(*doc, {"ranks", "origin_ns"}); !s.isOk()) return errorResponse(s);
  auto ranks_doc = doc->find("ranks");
  if (ranks_doc == doc->end() || !ranks_doc->is_array() || ranks_doc->empty()) {
    return errorResponse(invalid("ranks", "required, a non-empty array"));
  }
  std::vector<RankSpec> ranks;
  for (size_t i = 0; i < ranks_doc->size(); ++i) {
    auto spec = rankSpecFromJson((*ranks_doc)[i]);
    if (!spec.isOk()) {
      return errorResponse(Status(spec.status().code(),
                                  "ranks[" + std::to_string(i) + "]." + spec.status().message()));
    }
    ranks.push_back(spec.value());
  }
  auto origin_ns = intField(*doc, "origin_ns", 0, std::numeric_limits<int64_t>::max(), 0);
  if (!origin_ns.isOk()) return errorResponse(origin_ns.status());
  if (shutting_down_) {
    return errorResponse(Status(StatusCode::kUnavailable, "the agent is shutting down"));
  }

  auto workload = std::make_shared<Workload>();
  workload->ranks = static_cast<int>(ranks.size());
  workload->buffer =
      std::make_unique<ReportBuffer>(*origin_ns, workload->ranks, options_.report_buffer_entries);
  auto handle = agent_.startWorkload(ranks, *origin_ns, workload->buffer.get());
  if (!handle.isOk()) return errorResponse(handle.status());
  workload->handle = std::move(handle.value());

  std::vector<std::shared_ptr<Workload>> retired;  // destroyed outside the lock
  {
    std::lock_guard lock(workload_mu_);
    workload->id = "w-" + std::to_string(next_workload_id_++);
    workloads_[workload->id] = workload;
    // Finished workloads nobody fetched to the end: keep only the newest few.
    std::vector<std::string> finished;
    for (const auto& [id, w] : workloads_) {
      if (w != workload && w->buffer->complete()) finished.push_back(id);
    }
    std::sort(finished.begin(), finished.end(), [](const std::string& a, const std::string& b) {
      return std::stoll(a.substr(2)) < std::stoll(b.substr(2));
    });
    while (finished.size() > options_.retained_finished_workloads) {
      retired.push_back(workloads_[finished.front()]);
      workloads_.erase(finished.front());
      finished.erase(finished.begin());
    }
  }
  core::logInfo("agent: started workload " + workload->id + " with " +
                std::to_string(ranks.size()) + " rank(s)");
  return jsonResponse(201, {{"id", workload->id}, {"ranks", workload->ranks}});
}

HttpResponse AgentService::workloadReports(const std::string& id, const std::string& query) {
  const auto params = parseQuery(query);
  auto after = queryInt(params, "after", 0, std::numeric_limits<int64_t>::max() / 2, 0);
  if (!after.isOk()) return errorResponse(after.status());
  auto wait_ms = queryInt(params, "wait_ms", 0, options_.max_wait_ms, 0);
  if (!wait_ms.isOk()) return errorResponse(wait_ms.status());
  auto workload = findWorkload(id);
  if (!workload) {
    return errorResponse(Status(StatusCode::kNotFound,
                                "no workload " + id + " (finished and fetched, or never started)"));
  }
  auto batch = workload->buffer->fetch(*after, options_.max_batch_entries,
                                       shutting_down_ ? 0 : static_cast<int>(*wait_ms));
  if (batch.complete && batch.next == *after) {
    // The controller already holds everything: forget the workload.
    std::lock_guard lock(workload_mu_);
    workloads_.erase(id);
  }
  return jsonResponse(200, {{"id", id},
                            {"next", batch.next},
                            {"samples", std::move(batch.samples)},
                            {"events", std::move(batch.events)},
                            {"exits", std::move(batch.exits)},
                            {"running", batch.running},
                            {"complete", batch.complete},
                            {"dropped_total", batch.dropped_total}});
}

HttpResponse AgentService::stopWorkload(const std::string& id, const std::string& query) {
  const auto params = parseQuery(query);
  auto grace_ms = queryInt(params, "grace_ms", 0, 600000, 5000);
  if (!grace_ms.isOk()) return errorResponse(grace_ms.status());
  auto workload = findWorkload(id);
  if (!workload) return errorResponse(Status(StatusCode::kNotFound, "no workload " + id));
  workload->stop(static_cast<int>(*grace_ms));
  auto batch = workload->buffer->fetch(std::numeric_limits<int64_t>::max() / 2, 1, 0);
  return jsonResponse(200, {{"id", id}, {"stopped", true}, {"running", batch.running}});
}

}  // namespace fabric_chaos::agent
