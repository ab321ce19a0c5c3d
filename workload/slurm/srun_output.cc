#include "workload/slurm/srun_output.h"

#include <cctype>
#include <charconv>
#include <csignal>

namespace fabric_chaos::workload {
namespace {

std::optional<int> parseNumber(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::optional<LabelledLine> parseLabelledLine(std::string_view line) {
  size_t at = 0;
  while (at < line.size() && line[at] == ' ') ++at;
  const size_t digits = at;
  while (at < line.size() && std::isdigit(static_cast<unsigned char>(line[at])) != 0) ++at;
  if (at == digits || at >= line.size() || line[at] != ':') return std::nullopt;
  auto task = parseNumber(line.substr(digits, at - digits));
  if (!task) return std::nullopt;
  ++at;
  if (at < line.size() && line[at] == ' ') ++at;  // "3:" alone is an empty line of task 3
  return LabelledLine{*task, std::string(line.substr(at))};
}

std::optional<TaskEnd> parseTaskEnd(std::string_view line) {
  // srun: error: <node>: task <N>: Exited with exit code <C>
  // srun: error: <node>: task <N>: Killed | Terminated
  // srun: error: <node>: tasks <A>-<B>: ... (a range, when several end alike) is not one task's
  // end and is left to the step's own exit.
  constexpr std::string_view kPrefix = "srun: error: ";
  if (line.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view rest = line.substr(kPrefix.size());
  const size_t node_end = rest.find(": task ");
  if (node_end == std::string_view::npos) return std::nullopt;
  TaskEnd end;
  end.node = std::string(rest.substr(0, node_end));
  rest = rest.substr(node_end + 7);
  const size_t task_end = rest.find(": ");
  if (task_end == std::string_view::npos) return std::nullopt;
  auto task = parseNumber(rest.substr(0, task_end));
  if (!task) return std::nullopt;
  end.task = *task;
  const std::string_view verdict = rest.substr(task_end + 2);
  constexpr std::string_view kExited = "Exited with exit code ";
  if (verdict.substr(0, kExited.size()) == kExited) {
    auto code = parseNumber(verdict.substr(kExited.size()));
    if (!code) return std::nullopt;
    end.exit_code = *code;
  } else if (verdict == "Killed") {
    end.exit_code = 128 + SIGKILL;
  } else if (verdict == "Terminated") {
    end.exit_code = 128 + SIGTERM;
  } else {
    return std::nullopt;
  }
  return end;
}

std::vector<std::string> frameLine(const std::string& line, size_t max_bytes) {
  const bool marked = !line.empty() && (line.front() == '+' || line.front() == '=');
  if (max_bytes < 2 || (line.size() <= max_bytes && !marked)) return {line};
  std::vector<std::string> pieces;
  const size_t body = max_bytes - 1;  // room for the mark
  size_t at = 0;
  while (line.size() - at > body) {
    pieces.push_back("+" + line.substr(at, body));
    at += body;
  }
  pieces.push_back("=" + line.substr(at));
  return pieces;
}

std::optional<std::string> LineJoiner::add(std::string_view physical) {
  if (!physical.empty() && physical.front() == '+') {
    pending_.append(physical.substr(1));
    return std::nullopt;
  }
  if (!physical.empty() && physical.front() == '=') physical.remove_prefix(1);
  std::string whole = std::move(pending_);
  pending_.clear();
  whole.append(physical);
  return whole;
}

}  // namespace fabric_chaos::workload
