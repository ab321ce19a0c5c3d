#pragma once
// What srun prints for a job step run with --label (docs/workloads.md, "Through Slurm"): each
// task's output lines behind "N: ", srun's own verdicts on its stderr ("srun: error: h1: task 1:
// Exited with exit code 3"), and report lines framed so that srun's 1024-byte line split cannot
// cut one. Pure; a LineJoiner is one thread's.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric_chaos::workload {

struct LabelledLine {
  int task = 0;
  std::string text;
};
// "  3: text" -> {3, "text"}; nullopt for a line without a task label (srun's own messages).
std::optional<LabelledLine> parseLabelledLine(std::string_view line);

// One task's end as srun reports it on stderr; tasks that exit 0 get no such line.
struct TaskEnd {
  int task = 0;
  std::string node;
  int exit_code = 0;  // 128+signal when killed ("Killed": 137, "Terminated": 143)
};
std::optional<TaskEnd> parseTaskEnd(std::string_view line);

// Splits a line into physical lines of at most max_bytes: every piece but the last starts with
// '+', the last with '='. A line that fits goes as it is, unless it starts with one of the marks
// itself (a report line is JSON and starts with '{').
std::vector<std::string> frameLine(const std::string& line, size_t max_bytes);

// Puts one task's framed lines back together.
class LineJoiner {
 public:
  // A whole line once its last piece has arrived.
  std::optional<std::string> add(std::string_view physical);

 private:
  std::string pending_;
};

}  // namespace fabric_chaos::workload
