#include "workload/exec_rank.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace fabric_chaos::workload {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr size_t kMaxQuotedLine = 300;
// A step time the workload gives is believed when it lies between a little before the command
// started (its own clock read before it printed) and now.
constexpr int64_t kStartSlackNs = 5'000'000'000;

std::string clipped(const std::string& line) {
  return line.size() <= kMaxQuotedLine ? line : line.substr(0, kMaxQuotedLine) + "...";
}

}  // namespace

std::string_view execRankEndName(ExecRankEnd end) {
  switch (end) {
    case ExecRankEnd::kStopped:
      return "stopped";
    case ExecRankEnd::kExited:
      return "exited";
    case ExecRankEnd::kSilent:
      return "silent";
    case ExecRankEnd::kStartFailed:
      return "start_failed";
  }
  return "exited";
}

ExecRankReporter::ExecRankReporter(ExecRankOptions options, std::unique_ptr<StepParser> parser,
                                   Emit emit)
    : options_(options), parser_(std::move(parser)), emit_(std::move(emit)) {}

void ExecRankReporter::started(int64_t now_ns, ClockOffsets offsets) {
  started_ns_ = now_ns;
  last_flush_ns_ = now_ns;
  offsets_ = offsets;
  if (!options_.reports_steps) {
    ready_ = true;
    emit_(encodeReady(options_.rank, now_ns));
  }
}

void ExecRankReporter::stdoutLine(const std::string& line, int64_t now_ns) {
  ++lines_;
  const std::optional<ParsedStep> step = parser_->feed(line);
  if (!step) {
    if (!line.empty()) last_other_line_ = clipped(line);
    return;
  }
  const int64_t duration_ns = std::llround(step->duration_ms * kNsPerMs);
  auto believable = [&](double start_ns) {
    return start_ns >= static_cast<double>(started_ns_ - kStartSlackNs) &&
           start_ns <= static_cast<double>(now_ns + kNsPerMs);
  };
  int64_t start_ns = now_ns - duration_ns;  // the line arrived as the step ended
  const auto onOurClock = [](double seconds, int64_t offset_ns) {
    return std::llround(seconds * 1e9) + offset_ns;
  };
  if (step->t_start_s && believable(onOurClock(*step->t_start_s, offsets_.monotonic_ns))) {
    start_ns = onOurClock(*step->t_start_s, offsets_.monotonic_ns);
  } else if (step->t_wall_s && believable(onOurClock(*step->t_wall_s, offsets_.wall_ns))) {
    start_ns = onOurClock(*step->t_wall_s, offsets_.wall_ns);
  }
  RawSample sample;
  sample.iteration = step->step.value_or(next_iteration_);
  next_iteration_ = sample.iteration + 1;
  sample.start_ns = start_ns;
  sample.duration_ns = duration_ns;
  sample.bytes = step->bytes.value_or(0);
  if (step->busbw_gbps && options_.world > 1 && step->duration_ms > 0) {
    // The bytes that make docs/scoring.md's busbw (bytes / time × 2(n-1)/n over the run's ranks)
    // equal the workload's own figure, whose bus factor knows its collective and GPU count.
    const double factor = 2.0 * (options_.world - 1) / options_.world;
    sample.bytes = std::llround(*step->busbw_gbps * 1e9 * (step->duration_ms / 1e3) / factor);
  }
  if (!ready_) {
    ready_ = true;
    emit_(encodeReady(options_.rank, now_ns));
  }
  pending_.push_back(sample);
  ++iterations_;
  last_step_ns_ = now_ns;
  if (now_ns - last_flush_ns_ >= options_.flush_ms * kNsPerMs) {
    flush();
    last_flush_ns_ = now_ns;
  }
}

void ExecRankReporter::stderrLine(const std::string& line) {
  if (line.empty()) return;
  stderr_tail_.push_back(clipped(line));
  while (stderr_tail_.size() > options_.stderr_tail_lines) stderr_tail_.pop_front();
}

bool ExecRankReporter::tick(int64_t now_ns) {
  if (now_ns - last_flush_ns_ >= options_.flush_ms * kNsPerMs) {
    flush();
    last_flush_ns_ = now_ns;
  }
  return options_.reports_steps && options_.silence_ms > 0 && iterations_ > 0 &&
         now_ns - last_step_ns_ > options_.silence_ms * kNsPerMs;
}

int ExecRankReporter::finish(ExecRankEnd end, int exit_code, const std::string& message,
                             int64_t now_ns) {
  flush();
  if (end != ExecRankEnd::kStopped) {
    nlohmann::json detail = {
        {"reason", execRankEndName(end)}, {"exit_code", exit_code}, {"message", message},
        {"iteration", next_iteration_},   {"steps", iterations_},   {"stderr_tail", stderr_tail_}};
    if (iterations_ == 0) {
      // Nothing parsed: what the command printed instead is the likeliest clue.
      detail["stdout_lines"] = lines_;
      detail["last_stdout_line"] = last_other_line_;
    }
    emit_(encodeEvent(options_.rank, now_ns, kEventRankError, detail));
  }
  emit_(encodeDone(options_.rank, now_ns, iterations_));
  if (end == ExecRankEnd::kStopped) return 0;
  return exit_code != 0 ? exit_code : 1;
}

void ExecRankReporter::flush() {
  if (pending_.empty()) return;
  emit_(encodeSamples(options_.rank, pending_));
  pending_.clear();
}

}  // namespace fabric_chaos::workload
