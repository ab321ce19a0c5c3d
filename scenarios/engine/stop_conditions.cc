#include "scenarios/engine/stop_conditions.h"

#include <cstdio>

namespace fabric_chaos::scenarios {

std::string percentText(double fraction) {
  char buf[32];
  // %g drops trailing zeros; rounding to 4 significant digits hides binary noise (0.07 * 100).
  std::snprintf(buf, sizeof buf, "%.4g%%", fraction * 100);
  return buf;
}

std::string busbwBelowText(double fraction, int64_t for_ms) {
  return "busbw below " + percentText(fraction) + " of baseline for " + std::to_string(for_ms) +
         " ms";
}

}  // namespace fabric_chaos::scenarios
