#pragma once
// Minimal leveled logging to stderr with a wall-clock timestamp. Thread-safe (one write per line).

#include <string>

namespace fabric_chaos::core {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void setLogLevel(LogLevel level);
void log(LogLevel level, const std::string& message);
inline void logInfo(const std::string& m) { log(LogLevel::kInfo, m); }
inline void logWarn(const std::string& m) { log(LogLevel::kWarn, m); }
inline void logError(const std::string& m) { log(LogLevel::kError, m); }

}  // namespace fabric_chaos::core
