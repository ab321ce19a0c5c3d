#pragma once
// An external workload's stdout read as training steps (docs/workloads.md): JSON lines, a regular
// expression with named groups, or nccl-tests' result table. Lines that are not steps are not
// errors: training scripts print other things too. Pure; one parser per stream, one thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fabric_chaos::workload {

enum class StepFormat {
  kJsonLines,  // {"step": 3, "t_start": 812.5, "duration_ms": 183.2, "bytes": 2626048}
  kRegex,      // named groups: duration_ms | duration_s | duration_us, and step, bytes, t_start
  kNcclTests,  // all_reduce_perf and friends: one sample per data row
};
std::string_view stepFormatName(StepFormat format);  // "jsonl", "regex", "nccl-tests"
std::optional<StepFormat> parseStepFormat(std::string_view name);

// Which of an nccl-tests row's two timings a sample takes.
enum class NcclPlacement { kOutOfPlace, kInPlace };
std::string_view ncclPlacementName(NcclPlacement placement);  // "out-of-place", "in-place"
std::optional<NcclPlacement> parseNcclPlacement(std::string_view name);

struct StepParserSpec {
  StepParserSpec() = default;
  StepParserSpec(StepFormat f, std::string p = "",  // NOLINT(google-explicit-constructor)
                 NcclPlacement pl = NcclPlacement::kOutOfPlace)
      : format(f), pattern(std::move(p)), placement(pl) {}

  StepFormat format = StepFormat::kJsonLines;
  std::string pattern;  // kRegex only: PCRE2 syntax, (?<name>...) groups
  NcclPlacement placement = NcclPlacement::kOutOfPlace;  // kNcclTests only
};

// One step as the workload printed it. Times the workload did not give are left empty; the caller
// fills them from when the line arrived.
struct ParsedStep {
  std::optional<int64_t> step;
  std::optional<double> t_start_s;  // CLOCK_MONOTONIC seconds (Python's time.monotonic())
  std::optional<double> t_wall_s;   // Unix seconds (time.time()), when given instead
  double duration_ms = 0;
  std::optional<int64_t> bytes;
  // What the workload computed itself (nccl-tests' busbw column): the caller may prefer it.
  std::optional<double> busbw_gbps;
};

class StepParser {
 public:
  virtual ~StepParser() = default;
  // One line without its newline: the step it reports, or nullopt when it reports none.
  virtual std::optional<ParsedStep> feed(const std::string& line) = 0;
};

// kInvalidArgument, saying what is wrong: a pattern that does not compile (PCRE2's message and
// offset), a regex without a duration group, or a pattern given to a format that takes none.
core::Status checkStepParserSpec(const StepParserSpec& spec);
core::Result<std::unique_ptr<StepParser>> makeStepParser(const StepParserSpec& spec);

}  // namespace fabric_chaos::workload
