#pragma once
// Five-field cron expressions (minute hour day-of-month month day-of-week), evaluated in UTC:
// parsing into a set of allowed values per field, and the next fire time after a given instant.
// Pure functions: errors name the field ("cron field 2 (hour): 25 is out of range 0-23"); safe
// from any thread.
//
// Semantics are Vixie cron's (cronie, Debian's cron): `*`, lists `1,5`, ranges `1-5`, steps `*/5`,
// `1-30/2` and `10/15` (= 10-max/15); month names jan-dec and day names sun-sat, case-insensitive;
// day-of-week 0-7 with 0 and 7 both Sunday. When both day-of-month and day-of-week are restricted
// (neither field starts with `*`), a day matches if EITHER matches; otherwise both must match.
// The macros @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly are accepted.
// An expression that can never fire (e.g. "0 0 30 2 *") is rejected.

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fabric_chaos::scenarios::schedule {

struct CronSpec {
  std::string text;               // as given, for display
  std::bitset<60> minutes;        // 0-59
  std::bitset<24> hours;          // 0-23
  std::bitset<32> days_of_month;  // 1-31 (bit 0 unused)
  std::bitset<13> months;         // 1-12 (bit 0 unused)
  std::bitset<7> days_of_week;    // 0-6, Sunday = 0
  // Vixie's DOM_STAR / DOW_STAR: the field starts with '*', so it does not restrict the day.
  bool dom_star = true;
  bool dow_star = true;
};

core::Result<CronSpec> parseCron(std::string_view text);

// The first fire time strictly after after_wall_ms (Unix epoch ms, UTC), on a whole minute.
// Always found for a spec from parseCron (the Gregorian calendar repeats every 400 years, and
// parseCron rejects specs that never fire); -1 for a spec that can never fire.
int64_t nextFire(const CronSpec& spec, int64_t after_wall_ms);

}  // namespace fabric_chaos::scenarios::schedule
