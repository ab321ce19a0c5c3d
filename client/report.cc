#include "client/report.h"

#include <cstdio>
#include <regex>
#include <set>
#include <sstream>

namespace fabric_chaos::client {

using nlohmann::json;

namespace {

// Gates whose verdict names the steps that broke them (scenarios/analysis.cc, checkGates).
const std::set<std::string> kPerStepGates = {"max_recovery_ms",  "min_retained",
                                             "max_p99_slowdown", "max_sm_takeover_ms",
                                             "max_reroute_ms",   "require_survival"};

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

const json* num(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? &*it : nullptr;
}

std::string number(const json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) return fmt("%.6g", value.get<double>());
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_null()) return "null";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

const json& result(const FollowedRun& run) {
  static const json kNull;
  if (!run.body.is_object()) return kNull;
  auto it = run.body.find("result");
  return it != run.body.end() && it->is_object() ? *it : kNull;
}

json gates(const FollowedRun& run) {
  const json& r = result(run);
  if (r.is_object() && r.contains("gates") && r["gates"].is_array()) return r["gates"];
  return json::array();
}

json steps(const FollowedRun& run) {
  const json& r = result(run);
  if (!r.is_object()) return json::array();
  auto analysis = r.find("analysis");
  if (analysis == r.end() || !analysis->is_object()) return json::array();
  auto s = analysis->find("steps");
  return s != analysis->end() && s->is_array() ? *s : json::array();
}

std::optional<double> durationS(const FollowedRun& run) {
  const json& b = run.body;
  if (const json* d = num(b, "duration_ms"); d != nullptr && d->get<double>() > 0) {
    return d->get<double>() / 1000.0;
  }
  const json* started = num(b, "started_ms");
  const json* finished = num(b, "finished_ms");
  if (started && finished && started->get<double>() > 0 &&
      finished->get<double>() >= started->get<double>()) {
    return (finished->get<double>() - started->get<double>()) / 1000.0;
  }
  if (b.is_object() && b.contains("transitions") && b["transitions"].is_array() &&
      b["transitions"].size() >= 2) {
    const json& t = b["transitions"];
    const json* first = num(t.front(), "wall_ms");
    const json* last = num(t.back(), "wall_ms");
    if (first && last) return (last->get<double>() - first->get<double>()) / 1000.0;
  }
  return std::nullopt;
}

std::string stopLine(const FollowedRun& run) {
  const json& r = result(run);
  if (!r.is_object() || !r.contains("stop") || !r["stop"].is_object()) return "";
  const json& stop = r["stop"];
  std::string line = str(stop, "reason");
  if (std::string detail = str(stop, "detail"); !detail.empty()) line += " (" + detail + ")";
  return line;
}

bool isErrorState(const std::string& state) {
  return state != "passed" && state != "failed" && state != "skipped";
}

std::string failedGatesMessage(const json& verdicts) {
  std::string message;
  for (const json& g : verdicts) {
    if (g.value("passed", true)) continue;
    message += (message.empty() ? "" : "; ") + str(g, "gate") + ": " + str(g, "detail");
  }
  return message;
}

std::string errorMessage(const FollowedRun& run) {
  std::vector<std::string> parts;
  if (std::string e = str(run.body, "error"); !e.empty()) parts.push_back(e);
  if (std::string s = stopLine(run); !s.empty()) parts.push_back("stop: " + s);
  if (!run.problem.empty()) parts.push_back(run.problem);
  std::string message = "run " + (run.state.empty() ? std::string("did not finish") : run.state);
  for (size_t i = 0; i < parts.size(); ++i) message += (i == 0 ? ": " : "; ") + parts[i];
  return message;
}

void property(std::ostream& xml, const std::string& indent, const std::string& name,
              const std::string& value) {
  xml << indent << "<property name=\"" << xmlEscape(name) << "\" value=\"" << xmlEscape(value)
      << "\"/>\n";
}

void stepProperties(std::ostream& xml, const std::string& indent, const std::string& prefix,
                    const json& step) {
  for (const char* key :
       {"fault_start_ms", "fault_end_ms", "baseline_busbw_gbps", "worst_busbw_gbps", "retained",
        "time_to_detect_ms", "time_to_recover_ms", "longest_stall_ms", "time_to_first_progress_ms",
        "survived", "recovered", "score"}) {
    if (step.contains(key)) property(xml, indent, prefix + key, number(step[key]));
  }
}

}  // namespace

std::string xmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\n':
        out += "&#10;";  // kept inside attributes, where a raw newline would become a space
        break;
      case '\t':
      case '\r':
        out += "&#" + std::to_string(u) + ";";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\xEF\xBF\xBD";  // XML 1.0 cannot carry other control characters at all
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::vector<int> stepsNamedIn(const std::string& detail) {
  static const std::regex kStep(R"(\bstep (\d+))");
  std::vector<int> out;
  for (auto it = std::sregex_iterator(detail.begin(), detail.end(), kStep);
       it != std::sregex_iterator(); ++it) {
    const int step = std::stoi((*it)[1].str());
    if (std::find(out.begin(), out.end(), step) == out.end()) out.push_back(step);
  }
  return out;
}

std::string verdictBlock(const FollowedRun& run) {
  std::ostringstream out;
  if (run.id <= 0) {
    out << run.scenario << "  " << (run.state.empty() ? "skipped" : run.state)
        << "  (never started)\n";
    return out.str();
  }
  out << "run " << run.id << "  " << run.scenario << "  "
      << (run.state.empty() ? "unknown" : run.state);
  if (const json* score = num(run.body, "score")) {
    out << "  score " << fmt("%.1f", score->get<double>());
  }
  out << "\n";
  for (const json& g : gates(run)) {
    std::string name = str(g, "gate");
    name.resize(std::max<size_t>(name.size(), 17), ' ');
    out << "  gate " << name << " " << (g.value("passed", false) ? "passed" : "FAILED") << "  "
        << str(g, "detail") << "\n";
  }
  if (std::string stop = stopLine(run); !stop.empty()) out << "  stop: " << stop << "\n";
  if (std::string error = str(run.body, "error"); !error.empty()) {
    out << "  error: " << error << "\n";
  }
  if (const json& r = result(run); r.is_object() && r.contains("analysis")) {
    if (std::string note = str(r["analysis"], "note"); !note.empty()) {
      out << "  note: " << note << "\n";
    }
  }
  if (!run.problem.empty()) out << "  client: " << run.problem << "\n";
  out << "  " << run.url << "\n";
  return out.str();
}

std::string verdictReport(const Outcome& outcome) {
  std::ostringstream out;
  out << "\n";
  if (outcome.suite && outcome.suite_run_id > 0) {
    out << "suite " << outcome.name << " (suite run " << outcome.suite_run_id << "): "
        << (str(outcome.suite_body, "state").empty() ? "unknown" : str(outcome.suite_body, "state"))
        << "\n";
  }
  for (const FollowedRun& run : outcome.runs) out << verdictBlock(run);
  if (!outcome.error.empty()) out << "error: " << outcome.error << "\n";
  out << "verdict: " << outcome.verdict << " (exit " << outcome.exit_code << ")\n";
  return out.str();
}

std::string junitXml(const Outcome& outcome) {
  const std::string classname = "fabric-chaos." + outcome.name;
  std::ostringstream cases;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double total_s = 0;
  const std::string in2 = "  ", in4 = "    ", in6 = "      ";

  for (const FollowedRun& run : outcome.runs) {
    ++tests;
    const auto duration = durationS(run);
    if (duration) total_s += *duration;
    cases << in2 << "<testcase classname=\"" << xmlEscape(classname) << "\" name=\""
          << xmlEscape(run.scenario) << "\" time=\"" << fmt("%.3f", duration.value_or(0))
          << "\">\n";
    cases << in4 << "<properties>\n";
    if (run.id > 0) {
      property(cases, in6, "run_id", std::to_string(run.id));
      property(cases, in6, "url", run.url);
    }
    property(cases, in6, "state", run.state.empty() ? "unknown" : run.state);
    if (std::string fabric = str(run.body, "fabric"); !fabric.empty()) {
      property(cases, in6, "fabric", fabric);
    }
    if (const json* score = num(run.body, "score")) property(cases, in6, "score", number(*score));
    if (const json& r = result(run); r.is_object() && r.contains("analysis")) {
      if (const json* b = num(r["analysis"], "baseline_busbw_gbps")) {
        property(cases, in6, "baseline_busbw_gbps", number(*b));
      }
    }
    for (const json& g : gates(run)) {
      property(
          cases, in6, "gate." + str(g, "gate"),
          std::string(g.value("passed", false) ? "passed" : "FAILED") + ": " + str(g, "detail"));
    }
    for (const json& step : steps(run)) {
      stepProperties(cases, in6, "step." + number(step.value("step", json(0))) + ".", step);
    }
    if (std::string stop = stopLine(run); !stop.empty()) property(cases, in6, "stop", stop);
    cases << in4 << "</properties>\n";

    if (run.state == "skipped" || run.id <= 0) {
      ++skipped;
      cases << in4 << "<skipped message=\"" << xmlEscape("never started by the suite") << "\"/>\n";
    } else if (run.state == "failed") {
      ++failures;
      std::string message = failedGatesMessage(gates(run));
      if (message.empty()) message = "run failed";
      cases << in4 << "<failure message=\"" << xmlEscape(message) << "\" type=\"gate\">"
            << xmlEscape(verdictBlock(run)) << "</failure>\n";
    } else if (isErrorState(run.state)) {
      ++errors;
      cases << in4 << "<error message=\"" << xmlEscape(errorMessage(run)) << "\" type=\""
            << xmlEscape(run.state.empty() ? "unfinished" : run.state) << "\">"
            << xmlEscape(verdictBlock(run)) << "</error>\n";
    }
    cases << in4 << "<system-out>" << xmlEscape(verdictBlock(run)) << "</system-out>\n";
    cases << in2 << "</testcase>\n";

    // One testcase per fault step, failing when a failed per-step gate names it.
    const json verdicts = gates(run);
    for (const json& step : steps(run)) {
      ++tests;
      const int index = step.value("step", 0);
      std::string failure;
      for (const json& g : verdicts) {
        if (g.value("passed", true) || kPerStepGates.count(str(g, "gate")) == 0) continue;
        const auto named = stepsNamedIn(str(g, "detail"));
        if (std::find(named.begin(), named.end(), index) == named.end()) continue;
        failure += (failure.empty() ? "" : "; ") + str(g, "gate") + ": " + str(g, "detail");
      }
      double fault_s = 0;
      if (const json* s = num(step, "fault_start_ms"), *e = num(step, "fault_end_ms"); s && e) {
        fault_s = std::max(0.0, (e->get<double>() - s->get<double>()) / 1000.0);
      }
      cases << in2 << "<testcase classname=\"" << xmlEscape(classname) << "\" name=\""
            << xmlEscape(run.scenario + "/step-" + std::to_string(index)) << "\" time=\""
            << fmt("%.3f", fault_s) << "\">\n";
      cases << in4 << "<properties>\n";
      property(cases, in6, "run_id", std::to_string(run.id));
      stepProperties(cases, in6, "", step);
      cases << in4 << "</properties>\n";
      if (!failure.empty()) {
        ++failures;
        cases << in4 << "<failure message=\"" << xmlEscape(failure) << "\" type=\"gate\">"
              << xmlEscape(failure) << "</failure>\n";
      }
      cases << in2 << "</testcase>\n";
    }
  }

  std::ostringstream xml;
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml << "<testsuite name=\"" << xmlEscape(outcome.name) << "\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped
      << "\" time=\"" << fmt("%.3f", total_s) << "\">\n";
  xml << in2 << "<properties>\n";
  property(xml, in4, "verdict", outcome.verdict);
  property(xml, in4, "exit_code", std::to_string(outcome.exit_code));
  if (outcome.suite) {
    property(xml, in4, "suite", outcome.name);
    if (outcome.suite_run_id > 0) {
      property(xml, in4, "suite_run_id", std::to_string(outcome.suite_run_id));
    }
    if (std::string state = str(outcome.suite_body, "state"); !state.empty()) {
      property(xml, in4, "suite_state", state);
    }
  }
  if (!outcome.error.empty()) property(xml, in4, "error", outcome.error);
  xml << in2 << "</properties>\n";
  xml << cases.str();
  if (!outcome.error.empty()) {
    xml << in2 << "<system-err>" << xmlEscape("error: " + outcome.error) << "</system-err>\n";
  }
  xml << "</testsuite>\n";
  return xml.str();
}

json jsonReport(const Outcome& outcome) {
  json out = {{"verdict", outcome.verdict}, {"exit_code", outcome.exit_code}};
  if (!outcome.error.empty()) out["error"] = outcome.error;
  if (outcome.suite) {
    out["suite"] = outcome.name;
    out["suite_run"] = outcome.suite_body.is_null() ? json::object() : outcome.suite_body;
  }
  json runs = json::array();
  for (const FollowedRun& run : outcome.runs) {
    if (run.id > 0 && run.body.is_object()) runs.push_back(run.body);
  }
  out["runs"] = std::move(runs);
  return out;
}

}  // namespace fabric_chaos::client
