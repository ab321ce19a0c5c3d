#include "ib/opensm_log.h"

#include <time.h>

#include <cstdio>
#include <sstream>

namespace fabric_chaos::ib {

std::optional<double> enteredMasterAtMs(const std::string& log, double after_ms) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const time_t now = time(nullptr);
  tm today{};
  localtime_r(&now, &today);
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Entering MASTER state") == std::string::npos) continue;
    tm when = today;
    char month[4] = {};
    int usec = 0;
    if (std::sscanf(line.c_str(), "%3s %d %d:%d:%d %d", month, &when.tm_mday, &when.tm_hour,
                    &when.tm_min, &when.tm_sec, &usec) != 6) {
      continue;
    }
    for (int m = 0; m < 12; ++m) {
      if (std::string(month) == kMonths[m]) when.tm_mon = m;
    }
    when.tm_isdst = -1;
    const double ms = static_cast<double>(mktime(&when)) * 1000.0 + usec / 1000.0;
    if (ms >= after_ms) return ms;
  }
  return std::nullopt;
}

}  // namespace fabric_chaos::ib
