#include "scenarios/engine/run_result.h"

#include "injectors/model/target.h"
#include "scenarios/composition.h"

namespace fabric_chaos::scenarios {

using nlohmann::json;

std::vector<FaultWindow> faultWindows(const std::map<int, std::pair<double, double>>& windows) {
  std::vector<FaultWindow> out;
  for (const auto& [step, window] : windows) out.push_back({step, window.first, window.second});
  return out;
}

MeasuredResult measuredResult(const std::vector<core::Sample>& samples,
                              const std::vector<core::TelemetryPoint>& telemetry,
                              const std::vector<FaultWindow>& windows, const AnalysisParams& params,
                              bool survived) {
  MeasuredResult result;
  result.analysis = analyzeRun(samples, windows, params, survived);
  attachCongestion(result.analysis, telemetry);
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
