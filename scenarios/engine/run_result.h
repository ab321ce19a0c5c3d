#pragma once
// The result document a run stores (runs.result, docs/api.md): what a measured run, a stop and a
// fault left behind put in it. Pure: the execution passes in what it measured and decided.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/sample.h"
#include "scenarios/analysis.h"
#include "scenarios/engine/fault_timeline.h"
#include "store/store.h"

namespace fabric_chaos::scenarios {

// Why a run ended early, as stored in result.stop.
struct StopRequest {
  std::string reason;  // busbw_below, rank_died, max_duration, abort_request
  std::string detail;
  std::string error;         // the run's error text
  int64_t condition_ns = 0;  // steady clock: when the condition became true
};

// Per step, the observation of a traffic fault stored in its fault_reverted events: one, or one
// per part of a set cut across agents, merged (injectors::mergeTrafficObservations).
std::map<int, nlohmann::json> trafficObservations(const std::vector<store::EventRecord>& events);

// The IB probes' events (scenarios/subnet_recovery.h) among a run's, in time order.
std::vector<SubnetEvent> subnetEvents(const std::vector<store::EventRecord>& events);

// step -> [first apply, last end] (FaultTimeline::windows()), as the analysis takes them.
std::vector<FaultWindow> faultWindows(const std::map<int, std::pair<double, double>>& windows);

struct MeasuredResult {
  RunAnalysis analysis;
  // analysis, fault_windows, baseline, observe_end_ms, world_size, samples.
  nlohmann::json document;
};

// What a run that measured stores, whether it ran to its end or was stopped after its baseline:
// the analysis of `samples` over `params`' span with the run's fault windows, and of what the
// fabric showed over those windows.
MeasuredResult measuredResult(const std::vector<core::Sample>& samples,
                              const FabricObservations& observations,
                              const std::vector<FaultWindow>& windows, const AnalysisParams& params,
                              bool survived);

// result.stop of a run ended by a stop condition or an abort; its gates are not evaluated.
nlohmann::json stopResult(const StopRequest& stop, double condition_ms, double reverted_ms,
                          int faults_reverted);

// result.fault_left: one entry per fault that could not be reverted.
nlohmann::json faultLeftJson(const std::vector<LeftFault>& left);
// The run's error text for those faults.
std::string faultLeftText(const std::vector<LeftFault>& left);

}  // namespace fabric_chaos::scenarios
