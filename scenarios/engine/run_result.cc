#include "scenarios/engine/run_result.h"

#include "injectors/model/target.h"
#include "injectors/model/traffic_observation.h"
#include "scenarios/composition.h"

namespace fabric_chaos::scenarios {

using nlohmann::json;

std::vector<FaultWindow> faultWindows(const std::map<int, std::pair<double, double>>& windows) {
  std::vector<FaultWindow> out;
  for (const auto& [step, window] : windows) out.push_back({step, window.first, window.second});
  return out;
}

std::map<int, json> trafficObservations(const std::vector<store::EventRecord>& events) {
  std::map<int, json> out;
  for (const store::EventRecord& e : events) {
    if (e.kind != "fault_reverted" || !e.detail.is_object()) continue;
    const json observed = e.detail.value("observed", json());
    if (!observed.is_object() || !observed.contains("jain_fairness")) continue;
    // A set cut into parts across agents reverts once per part: together they are the step's.
    json& step = out[e.detail.value("step", -1)];
    step = injectors::mergeTrafficObservations(step.is_null() ? json::object() : step, observed);
  }
  return out;
}

std::vector<SubnetEvent> subnetEvents(const std::vector<store::EventRecord>& events) {
  std::vector<SubnetEvent> out;
  for (const store::EventRecord& e : events) {
    if (auto event = subnetEventOf(e.kind, e.t_ms, e.detail)) out.push_back(*event);
  }
  return out;
}

MeasuredResult measuredResult(const std::vector<core::Sample>& samples,
                              const FabricObservations& observations,
                              const std::vector<FaultWindow>& windows, const AnalysisParams& params,
                              bool survived) {
  MeasuredResult result;
  result.analysis = analyzeRun(samples, windows, params, survived);
  attachObservations(result.analysis, observations);
  json windows_json = json::array();
  for (const FaultWindow& w : windows) {
    windows_json.push_back({{"step", w.step}, {"start_ms", w.start_ms}, {"end_ms", w.end_ms}});
  }
  result.document = {
      {"analysis", toJson(result.analysis)},
      {"fault_windows", windows_json},
      {"baseline", {{"start_ms", params.baseline_start_ms}, {"end_ms", params.baseline_end_ms}}},
      {"observe_end_ms", params.observe_end_ms},
      {"world_size", params.world_size},
      {"samples", samples.size()}};
  return result;
}

json stopResult(const StopRequest& stop, double condition_ms, double reverted_ms,
                int faults_reverted) {
  return {{"reason", stop.reason},
          {"detail", stop.detail},
          {"condition_ms", condition_ms},
          {"reverted_ms", reverted_ms},
          {"time_to_revert_ms", reverted_ms - condition_ms},
          {"faults_reverted", faults_reverted}};
}

json faultLeftJson(const std::vector<LeftFault>& left) {
  json faults = json::array();
  for (const LeftFault& f : left) {
    json entry = {{"kind", f.kind},
                  {"target", describeTarget(f.target)},
                  {"target_type", injectors::toString(injectors::typeOf(f.target.target))},
                  {"host", f.target.host},
                  {"journal_id", f.journal_id},
                  {"attempts", f.attempts},
                  {"error", f.error}};
    if (const injectors::InterfaceTarget* interface = injectors::interfaceOf(f.target.target)) {
      entry["netns"] = interface->netns;
      entry["ifname"] = interface->ifname;
    }
    faults.push_back(std::move(entry));
  }
  return faults;
}

std::string faultLeftText(const std::vector<LeftFault>& left) {
  std::string text = std::to_string(left.size()) + " fault(s) could not be reverted:";
  for (const LeftFault& f : left) {
    text += " " + f.kind + " on " + describeTarget(f.target) + " (" + std::to_string(f.attempts) +
            " attempts: " + f.error + ");";
  }
  return text +
         " it stays in the fault journal: GET /v1/faults lists it and start-up recovery retries "
         "it";
}

}  // namespace fabric_chaos::scenarios
