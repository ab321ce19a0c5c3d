#pragma once
// The line protocol a workload rank writes on stdout for its agent: one JSON object per line.
//   {"type":"ready","rank":0,"t_ns":123}
//   {"type":"samples","rank":0,"samples":[[iteration,start_ns,duration_ns,bytes],...]}
//   {"type":"event","rank":0,"t_ns":123,"kind":"reconnect","detail":{...}}
//   {"type":"done","rank":0,"t_ns":123,"iterations":42}
// Times are CLOCK_MONOTONIC nanoseconds: the agent shares the clock and makes them run-relative.
// Pure functions.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::workload {

struct RawSample {
  int64_t iteration = 0;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t bytes = 0;
};

struct ReportLine {
  enum class Type { kReady, kSamples, kEvent, kDone };
  Type type = Type::kReady;
  int rank = 0;
  int64_t t_ns = 0;
  std::string kind;  // events only
  nlohmann::json detail = nlohmann::json::object();
  std::vector<RawSample> samples;
  int64_t iterations = 0;  // done only
};

// Event kinds a rank emits (ReportLine::kind), with their detail fields:
//   peer_lost   {"reason": "eof|connection_reset|broken_pipe|timeout|aborted|error",
//                "message": "...", "iteration": i, "epoch": e}; verbs ranks add
//                "wc_status" (ibv_wc_status_str) and "cm_event" when they have one
//   reconnected {"after_ms": ms since peer_lost, "epoch": e}
//   stall       {"iteration": i, "start_ns": iteration start, "duration_ms": to reconnection}
//   rank_error  {"reason": "...", "iteration": i}  (the rank then writes done and exits non-zero)
inline constexpr char kEventPeerLost[] = "peer_lost";
inline constexpr char kEventReconnected[] = "reconnected";
inline constexpr char kEventStall[] = "stall";
inline constexpr char kEventRankError[] = "rank_error";

std::string encodeReady(int rank, int64_t t_ns);
std::string encodeSamples(int rank, const std::vector<RawSample>& samples);
std::string encodeEvent(int rank, int64_t t_ns, const std::string& kind,
                        const nlohmann::json& detail);
std::string encodeDone(int rank, int64_t t_ns, int64_t iterations);
// Each encode* returns one line without the trailing newline.

core::Result<ReportLine> decodeReportLine(const std::string& line);

}  // namespace fabric_chaos::workload
