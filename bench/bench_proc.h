#pragma once
// What the benches read from /proc: a file's text, and a process's CPU seconds.

#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace fabric_chaos::bench {

// The whole file ("" when it cannot be read).
inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A process's user + system CPU seconds so far (its threads), and with `children` also what its
// reaped children used (cutime, cstime). 0 when the process is gone.
inline double cpuSecondsOf(pid_t pid, bool children = false) {
  const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; fields >> field && i <= 17; ++i) {
    if (i == 14 || i == 15 || (children && (i == 16 || i == 17))) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace fabric_chaos::bench
