#include "core/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>

namespace fabric_chaos::core {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};  // trivially constructed
}

void setLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

void log(LogLevel level, const std::string& message) {
  if (static_cast<int>(level) < g_level) return;
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line = std::string(stamp) + "." + (ms < 100 ? (ms < 10 ? "00" : "0") : "") +
                     std::to_string(ms) + "Z " + kNames[static_cast<int>(level)] + " " + message +
                     "\n";
  // On a terminal a progress display may own the current line: start by clearing it, so the
  // log line stands alone and the display redraws below it.
  static const bool kTerminal = isatty(2) == 1;
  if (kTerminal) line.insert(0, "\r\033[K");
  // One write() per line so that lines from several threads never interleave.
  ssize_t ignored = ::write(2, line.data(), line.size());
  (void)ignored;
}

}  // namespace fabric_chaos::core
