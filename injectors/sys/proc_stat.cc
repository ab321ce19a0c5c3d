#include "injectors/sys/proc_stat.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <iterator>
#include <string>

namespace fabric_chaos::sys {

std::optional<ProcessStat> parseProcessStat(std::string_view line) {
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  ProcessStat stat;
  for (int field = 3; field <= 22; ++field) {
    const size_t begin = rest.find_first_not_of(" \n");
    if (begin == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(begin);
    const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    const std::string_view value = rest.substr(0, end);
    if (field == 3) stat.state = value.front();
    if (field == 22) {
      const auto parsed =
          std::from_chars(value.data(), value.data() + value.size(), stat.start_time);
      if (parsed.ec != std::errc() || parsed.ptr != value.data() + value.size()) {
        return std::nullopt;
      }
      return stat;
    }
    rest.remove_prefix(end);
  }
  return std::nullopt;
}

std::optional<ProcessStat> readProcessStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parseProcessStat(text);
}

std::optional<uint64_t> processStartTime(pid_t pid) {
  const auto stat = readProcessStat(pid);
  if (!stat) return std::nullopt;
  return stat->start_time;
}

bool processAlive(pid_t pid) {
  if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
  const auto stat = readProcessStat(pid);
  return !stat || !stat->zombie();
}

}  // namespace fabric_chaos::sys
