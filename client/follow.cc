// The loop polls rather than reading the SSE stream: a poll every 500 ms is cheap, survives a
// proxy that buffers streams, and needs nothing but the synchronous client.

#include "client/follow.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <string_view>

#include "core/run_state.h"

namespace fabric_chaos::client {

using nlohmann::json;

namespace {

constexpr int64_t kNsPerMs = 1000000;

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string stringField(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t intField(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

class Follower {
 public:
  Follower(const RunOptions& options, FollowDeps& deps) : options_(options), deps_(deps) {
    start_ns_ = deps_.clock->nowNs();
    deadline_ns_ = options_.timeout_s > 0
                       ? start_ns_ + static_cast<int64_t>(options_.timeout_s * 1e9)
                       : LLONG_MAX;
  }

  Outcome run() {
    outcome_.suite = options_.kind == TargetKind::kSuite;
    outcome_.name = options_.name;
    if (deps_.interrupted && deps_.interrupted()) {
      outcome_.error = "interrupted (Ctrl-C) before anything was submitted";
      return finish();
    }
    const int64_t id = submit();
    if (id <= 0) return finish();
    if (!options_.wait) {
      outcome_.exit_code = kExitPassed;
      outcome_.verdict = "submitted";
      return outcome_;
    }
    if (outcome_.suite) {
      followSuite(id);
    } else {
      followRun(0);
    }
    return finish();
  }

 private:
  std::ostream& out() { return *deps_.out; }
  int64_t elapsedMs() const { return (deps_.clock->nowNs() - start_ns_) / kNsPerMs; }
  std::string runUrl(int64_t id) const {
    return deps_.api->baseUrl() + "/v1/runs/" + std::to_string(id);
  }
  std::string suiteUrl(int64_t id) const {
    return deps_.api->baseUrl() + "/v1/suite-runs/" + std::to_string(id);
  }

  Outcome finish() {
    if (deps_.progress != nullptr) deps_.progress->breakLine();
    settleVerdict(outcome_);
    return outcome_;
  }

  void say(const std::string& line) {
    if (deps_.progress != nullptr) deps_.progress->breakLine();
    out() << line << std::endl;
  }

  // Returns the new run's (or suite run's) id, or 0 with outcome_.error set.
  int64_t submit() {
    json body;
    std::string target;
    std::string what;
    if (outcome_.suite) {
      body = {{"suite", options_.name}};
      target = "/v1/suite-runs";
      what = "starting suite " + options_.name;
    } else {
      body = {{"scenario",
               options_.kind == TargetKind::kFile ? options_.document : json(options_.name)}};
      if (!options_.gates.empty()) body["gates"] = options_.gates;
      target = "/v1/runs";
      what = options_.kind == TargetKind::kFile
                 ? "starting scenario " + options_.name + " from " + options_.file
                 : "starting scenario " + options_.name;
    }
    if (!options_.fabric.empty()) body["fabric"] = options_.fabric;
    auto reply = deps_.api->call("POST", target, &body);
    if (!reply.isOk()) {
      outcome_.error = what + ": " + reply.status().message();
      return 0;
    }
    if (!reply->ok()) {
      outcome_.error = replyError(reply.value(), what).message();
      return 0;
    }
    const int64_t id = intField(reply->body, "id");
    if (id <= 0) {
      outcome_.error = what + ": the server's reply has no id: " + reply->body.dump();
      return 0;
    }
    if (outcome_.suite) {
      outcome_.suite_run_id = id;
      outcome_.suite_body = reply->body;
      say("suite " + options_.name + " started as suite run " + std::to_string(id) + ": " +
          suiteUrl(id));
    } else {
      FollowedRun run;
      run.scenario = options_.name;
      run.id = id;
      run.state = stringField(reply->body, "state");
      run.body = reply->body;
      run.url = runUrl(id);
      outcome_.runs.push_back(run);
      say("run " + std::to_string(id) + " (" + options_.name + ") " +
          (run.state.empty() ? "submitted" : run.state) + ": " + run.url);
    }
    return id;
  }

  // GET target; nullopt while the server is unreachable within the grace period; sets error and
  // returns nullopt when it is refused or the grace is over (check outcome_.error).
  std::optional<json> get(const std::string& target, const std::string& what) {
    auto reply = deps_.api->call("GET", target, nullptr);
    const int64_t now = elapsedMs();
    if (!reply.isOk()) {
      if (unreachable_since_ms_ < 0) unreachable_since_ms_ = now;
      if (now - unreachable_since_ms_ >= kUnreachableGraceMs) {
        outcome_.error = what + ": " + reply.status().message() + " (unreachable for " +
                         std::to_string((now - unreachable_since_ms_) / 1000) + " s)";
      }
      return std::nullopt;
    }
    unreachable_since_ms_ = -1;
    if (!reply->ok()) {
      outcome_.error = replyError(reply.value(), what).message();
      return std::nullopt;
    }
    return reply->body;
  }

  // Sleeps one poll period, never past the deadline.
  void pause() {
    const int64_t now = deps_.clock->nowNs();
    deps_.clock->sleepUntilNs(std::min(deadline_ns_, now + options_.poll_ms * kNsPerMs));
  }

  // Why to stop following now ("" = keep going).
  std::string stopReason() {
    if (deps_.interrupted && deps_.interrupted()) return "interrupted (Ctrl-C)";
    if (deps_.clock->nowNs() >= deadline_ns_) {
      return "timed out after " + fmt("%g", options_.timeout_s) + " s (--timeout)";
    }
    return "";
  }

  // Updates outcome_.runs[index] from a GET; false when following must stop (error set).
  bool refreshRun(size_t index) {
    FollowedRun& run = outcome_.runs[index];
    auto body =
        get("/v1/runs/" + std::to_string(run.id), "following run " + std::to_string(run.id));
    if (!body) return outcome_.error.empty();
    const std::string before = run.state;
    run.body = *body;
    run.state = stringField(*body, "state");
    if (std::string s = stringField(*body, "scenario"); !s.empty()) run.scenario = s;
    if (deps_.progress != nullptr) {
      deps_.progress->update("run " + std::to_string(run.id) + " " + run.scenario, *body,
                             elapsedMs(), elapsedMs());
      if (core::isFinalRunState(run.state) && before != run.state) deps_.progress->breakLine();
    }
    return true;
  }

  void followRun(size_t index) {
    while (true) {
      if (std::string why = stopReason(); !why.empty()) {
        abortRuns(why);
        return;
      }
      if (!refreshRun(index)) return;
      if (!outcome_.error.empty()) return;
      if (core::isFinalRunState(outcome_.runs[index].state)) return;
      pause();
    }
  }

  // Aborts what is still running, says so, and waits a little for the final states.
  void abortRuns(const std::string& why) {
    outcome_.error = why;
    if (outcome_.suite) {
      abortOne("/v1/suite-runs/" + std::to_string(outcome_.suite_run_id) + "/abort",
               "suite run " + std::to_string(outcome_.suite_run_id), why);
    } else {
      for (FollowedRun& run : outcome_.runs) {
        if (run.id <= 0 || core::isFinalRunState(run.state)) continue;
        abortOne("/v1/runs/" + std::to_string(run.id) + "/abort", "run " + std::to_string(run.id),
                 why);
        run.problem = why;
      }
    }
    // Settle: the report should show "aborted", not the state before the abort.
    const int64_t settle_until = elapsedMs() + kAbortSettleMs;
    while (elapsedMs() < settle_until) {
      if (outcome_.suite) pollSuiteOnce();
      bool all_final = true;
      for (size_t i = 0; i < outcome_.runs.size(); ++i) {
        FollowedRun& run = outcome_.runs[i];
        if (run.id <= 0 || core::isFinalRunState(run.state)) continue;
        auto body = deps_.api->call("GET", "/v1/runs/" + std::to_string(run.id), nullptr);
        if (body.isOk() && body->ok()) {
          run.body = body->body;
          run.state = stringField(body->body, "state");
        }
        if (!core::isFinalRunState(run.state)) all_final = false;
      }
      if (all_final && (!outcome_.suite || suiteFinal())) break;
      const int64_t now = deps_.clock->nowNs();
      deps_.clock->sleepUntilNs(now + options_.poll_ms * kNsPerMs);
    }
    for (FollowedRun& run : outcome_.runs) {
      if (run.id > 0 && run.problem.empty()) run.problem = why;
    }
    outcome_.error = why;  // a failed poll while settling must not hide why we stopped
  }

  void abortOne(const std::string& target, const std::string& what, const std::string& why) {
    auto reply = deps_.api->call("POST", target, nullptr);
    if (!reply.isOk()) {
      say("could not abort " + what + ": " + reply.status().message());
    } else if (reply->http_status == 409) {
      say(what + " had already finished; nothing to abort");
    } else if (!reply->ok()) {
      say("could not abort " + what + ": " + replyError(reply.value(), "abort").message());
    } else {
      say(why + ": aborted " + what + " on the server (its faults are reverted)");
    }
  }

  bool suiteFinal() const {
    const std::string state = stringField(outcome_.suite_body, "state");
    return core::isFinalRunState(state) || intField(outcome_.suite_body, "finished_ms") > 0;
  }

  // One GET of the suite run; maps its entries onto outcome_.runs. False when following must stop.
  bool pollSuiteOnce() {
    auto body = get("/v1/suite-runs/" + std::to_string(outcome_.suite_run_id),
                    "following suite run " + std::to_string(outcome_.suite_run_id));
    if (!body) return outcome_.error.empty();
    outcome_.suite_body = *body;
    const json entries = body->value("runs", json::array());
    if (!entries.is_array()) return true;
    if (outcome_.runs.size() < entries.size()) outcome_.runs.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      const json& entry = entries[i];
      FollowedRun& run = outcome_.runs[i];
      if (run.scenario.empty()) run.scenario = stringField(entry, "scenario");
      const int64_t run_id = intField(entry, "run_id");
      if (run_id > 0 && run.id != run_id) {
        run.id = run_id;
        run.url = runUrl(run_id);
        say("suite " + options_.name + ": " + run.scenario + " started as run " +
            std::to_string(run_id) + ": " + run.url);
      }
      if (run.id <= 0) run.state = stringField(entry, "state");
    }
    return true;
  }

  void followSuite(int64_t id) {
    (void)id;
    while (true) {
      if (std::string why = stopReason(); !why.empty()) {
        abortRuns(why);
        break;
      }
      if (!pollSuiteOnce() || !outcome_.error.empty()) break;
      const bool suite_final = suiteFinal();
      bool stop = false;
      for (size_t i = 0; i < outcome_.runs.size(); ++i) {
        FollowedRun& run = outcome_.runs[i];
        if (run.id <= 0 || core::isFinalRunState(run.state)) continue;
        if (!refreshRun(i)) {
          stop = true;
          break;
        }
      }
      if (stop || !outcome_.error.empty()) break;
      // A final suite gets one last refresh of its runs (above), then the loop ends.
      if (suite_final) break;
      pause();
    }
    for (FollowedRun& run : outcome_.runs) {
      if (run.id <= 0 && !core::isFinalRunState(run.state)) run.state = "skipped";
    }
  }

  const RunOptions& options_;
  FollowDeps& deps_;
  Outcome outcome_;
  int64_t start_ns_ = 0;
  int64_t deadline_ns_ = 0;
  int64_t unreachable_since_ms_ = -1;
};

}  // namespace

void settleVerdict(Outcome& outcome) {
  bool error = !outcome.error.empty();
  bool failed = false;
  if (outcome.runs.empty()) error = true;
  for (const FollowedRun& run : outcome.runs) {
    if (run.state == "passed") continue;
    if (run.state == "failed") {
      failed = true;
    } else if (run.state == "skipped" && outcome.suite) {
      // Skipped after an earlier failure (stop_on_failure): that failure decides.
    } else {
      error = true;
    }
  }
  if (outcome.suite) {
    const std::string state = stringField(outcome.suite_body, "state");
    if (state == "failed") {
      failed = true;
    } else if (state != "passed") {
      error = true;
    }
  }
  if (error) {
    outcome.exit_code = kExitError;
    outcome.verdict = "error";
  } else if (failed) {
    outcome.exit_code = kExitFailed;
    outcome.verdict = "failed";
  } else {
    outcome.exit_code = kExitPassed;
    outcome.verdict = "passed";
  }
}

void ProgressPrinter::update(const std::string& label, const json& run, int64_t now_ms,
                             int64_t elapsed_ms) {
  const std::string state = stringField(run, "state");
  const std::string line = label + "  " + describe(run, elapsed_ms);
  if (tty_) {
    out_ << "\r\x1b[K" << line << std::flush;
    pending_line_ = true;
    return;
  }
  if (label != last_label_ || state != last_state_ ||
      now_ms - last_plain_ms_ >= plain_interval_ms_) {
    out_ << line << "\n" << std::flush;
    last_label_ = label;
    last_state_ = state;
    last_plain_ms_ = now_ms;
  }
}

void ProgressPrinter::breakLine() {
  if (pending_line_) out_ << "\n" << std::flush;
  pending_line_ = false;
}

std::string ProgressPrinter::describe(const json& run, int64_t elapsed_ms) {
  std::string state = stringField(run, "state");
  if (state.empty()) state = "?";
  std::string text = state;
  const json live = run.is_object() ? run.value("live", json()) : json();
  double elapsed = static_cast<double>(elapsed_ms);
  if (live.is_object() && live.contains("elapsed_ms") && live["elapsed_ms"].is_number()) {
    elapsed = live["elapsed_ms"].get<double>();
  } else if (auto d = run.find("duration_ms"); d != run.end() && d->is_number()) {
    elapsed = d->get<double>();  // a finished run: its own duration, not the client's clock
  }
  text += "  " + fmt("%.1f s", elapsed / 1000.0);
  if (live.is_object()) {
    if (auto b = live.find("last_busbw_gbps"); b != live.end() && b->is_number()) {
      text += "  busbw " + fmt("%.3f GB/s", b->get<double>());
    }
    if (auto f = live.find("active_faults"); f != live.end()) {
      if (f->is_array()) {
        text += "  faults " + std::to_string(f->size());
      } else if (f->is_number()) {
        text += "  faults " + std::to_string(f->get<int64_t>());
      }
    }
  }
  if (core::isFinalRunState(state)) {
    if (auto s = run.find("score"); s != run.end() && s->is_number()) {
      text += "  score " + fmt("%.1f", s->get<double>());
    }
  }
  return text;
}

Outcome runAndFollow(const RunOptions& options, FollowDeps& deps) {
  Follower follower(options, deps);
  return follower.run();
}

}  // namespace fabric_chaos::client
