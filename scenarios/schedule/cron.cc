#include "scenarios/schedule/cron.h"

#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios::schedule {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;

constexpr int64_t kMinuteMs = 60'000;
constexpr int64_t kDayMs = 86'400'000;
// The Gregorian calendar (leap years and weekdays together) repeats every 400 years.
constexpr int64_t kDaysIn400Years = 146'097;

struct FieldInfo {
  const char* name;
  int min;
  int max;  // inclusive; 7 for day-of-week, folded onto 0 after parsing
  // Names accepted instead of numbers, starting at `min` (months) or 0 (days of week).
  std::array<const char*, 12> names;
  int name_count;
};

constexpr std::array<FieldInfo, 5> kFields = {{
    {"minute", 0, 59, {}, 0},
    {"hour", 0, 23, {}, 0},
    {"day-of-month", 1, 31, {}, 0},
    {"month",
     1,
     12,
     {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
     12},
    {"day-of-week", 0, 7, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, 7},
}};

struct Macro {
  const char* name;
  const char* expansion;
};
constexpr std::array<Macro, 7> kMacros = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

Status fieldError(size_t index, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "cron field " + std::to_string(index + 1) + " (" +
                                                  kFields[index].name + "): " + message);
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A number or (where the field has them) a name.
Result<int> parseValue(size_t index, std::string_view token) {
  const FieldInfo& field = kFields[index];
  if (token.empty()) return fieldError(index, "empty value");
  if (std::isdigit(static_cast<unsigned char>(token[0]))) {
    int value = 0;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size()) {
      return fieldError(index, "\"" + std::string(token) + "\" is not a number");
    }
    if (value < field.min || value > field.max) {
      return fieldError(index, std::to_string(value) + " is out of range " +
                                   std::to_string(field.min) + "-" + std::to_string(field.max));
    }
    return value;
  }
  const std::string name = lower(token);
  const int first = index == 3 ? 1 : 0;
  for (int i = 0; i < field.name_count; ++i) {
    if (name == field.names[i]) return first + i;
  }
  if (field.name_count == 0) {
    return fieldError(index, "\"" + std::string(token) + "\" is not a number");
  }
  return fieldError(index, "\"" + std::string(token) + "\" is not a number or a name (" +
                               field.names[0] + "-" + field.names[field.name_count - 1] + ")");
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t at = text.find(separator, start);
    if (at == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, at - start));
    start = at + 1;
  }
}

// One field: a comma-separated list of `*`, `a`, `a-b`, each optionally `/step`. Sets the bits
// of `out`, which is indexed by value (so 0-7 for day-of-week, folded by the caller).
Status parseField(size_t index, std::string_view text, std::bitset<64>& out) {
  const FieldInfo& field = kFields[index];
  for (std::string_view item : split(text, ',')) {
    if (item.empty()) return fieldError(index, "empty list item in \"" + std::string(text) + "\"");
    std::string_view range = item;
    int step = 1;
    bool has_step = false;
    if (size_t slash = item.find('/'); slash != std::string_view::npos) {
      range = item.substr(0, slash);
      std::string_view step_text = item.substr(slash + 1);
      auto [end, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
      if (step_text.empty() || ec != std::errc() || end != step_text.data() + step_text.size()) {
        return fieldError(index, "step \"" + std::string(step_text) + "\" is not a number");
      }
      if (step < 1 || step > field.max) {
        return fieldError(index, "step " + std::to_string(step) + " is out of range 1-" +
                                     std::to_string(field.max));
      }
      has_step = true;
    }
    int low = field.min;
    int high = field.max;
    if (range == "*") {
      // every value
    } else if (size_t dash = range.find('-'); dash != std::string_view::npos) {
      auto a = parseValue(index, range.substr(0, dash));
      if (!a.isOk()) return a.status();
      auto b = parseValue(index, range.substr(dash + 1));
      if (!b.isOk()) return b.status();
      if (*a > *b) {
        return fieldError(index, "range " + std::string(range) + " goes backwards");
      }
      low = *a;
      high = *b;
    } else {
      auto a = parseValue(index, range);
      if (!a.isOk()) return a.status();
      low = *a;
      // "10/15" means 10-max/15, as in cronie; a bare value is just itself.
      high = has_step ? field.max : *a;
    }
    // Day-of-week "*" is 0-6: 7 is only an alias, and "*/2" must not count Sunday twice.
    if (index == 4 && range == "*") high = 6;
    for (int v = low; v <= high; v += step) out.set(static_cast<size_t>(v));
  }
  return Status::ok();
}

// Howard Hinnant's civil_from_days: proleptic Gregorian, from days since 1970-01-01.
struct Civil {
  int64_t year;
  unsigned month;  // 1-12
  unsigned day;    // 1-31
};

Civil civilFromDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), m, d};
}

// 1970-01-01 was a Thursday (4).
unsigned weekday(int64_t days) {
  return static_cast<unsigned>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool dayMatches(const CronSpec& spec, int64_t days) {
  const Civil c = civilFromDays(days);
  if (!spec.months.test(c.month)) return false;
  const bool dom = spec.days_of_month.test(c.day);
  const bool dow = spec.days_of_week.test(weekday(days));
  // Vixie cron: restricted day-of-month and day-of-week are alternatives.
  if (spec.dom_star || spec.dow_star) return dom && dow;
  return dom || dow;
}

}  // namespace

Result<CronSpec> parseCron(std::string_view text) {
  CronSpec spec;
  spec.text = std::string(text);
  std::string expanded(text);
  if (!text.empty() && text.front() == '@') {
    const std::string name = lower(text);
    bool known = false;
    for (const Macro& m : kMacros) {
      if (name == m.name) {
        expanded = m.expansion;
        known = true;
      }
    }
    if (!known) {
      return Status(StatusCode::kInvalidArgument,
                    "cron: unknown macro " + std::string(text) +
                        " (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, "
                        "@hourly)");
    }
  }

  std::vector<std::string> fields;
  {
    std::string current;
    for (char c : expanded) {
      if (c == ' ' || c == '\t') {
        if (!current.empty()) fields.push_back(std::move(current));
        current.clear();
      } else {
        current.push_back(c);
      }
    }
    if (!current.empty()) fields.push_back(std::move(current));
  }
  if (fields.size() != kFields.size()) {
    return Status(StatusCode::kInvalidArgument,
                  "cron: expected 5 fields (minute hour day-of-month month day-of-week), got " +
                      std::to_string(fields.size()) + " in \"" + std::string(text) + "\"");
  }

  std::array<std::bitset<64>, 5> bits;
  for (size_t i = 0; i < kFields.size(); ++i) {
    FC_RETURN_IF_ERROR(parseField(i, fields[i], bits[i]));
  }
  for (size_t v = 0; v < 60; ++v) spec.minutes[v] = bits[0][v];
  for (size_t v = 0; v < 24; ++v) spec.hours[v] = bits[1][v];
  for (size_t v = 1; v <= 31; ++v) spec.days_of_month[v] = bits[2][v];
  for (size_t v = 1; v <= 12; ++v) spec.months[v] = bits[3][v];
  for (size_t v = 0; v < 7; ++v) spec.days_of_week[v] = bits[4][v];
  if (bits[4][7]) spec.days_of_week.set(0);  // 7 is Sunday too
  spec.dom_star = fields[2].front() == '*';
  spec.dow_star = fields[4].front() == '*';

  if (nextFire(spec, 0) < 0) {
    return Status(
        StatusCode::kInvalidArgument,
        "cron: \"" + std::string(text) + "\" never fires (no month has such a day of the month)");
  }
  return spec;
}

int64_t nextFire(const CronSpec& spec, int64_t after_wall_ms) {
  // The first whole minute strictly after the given instant.
  const int64_t start = (floorDiv(after_wall_ms, kMinuteMs) + 1) * kMinuteMs;
  const int64_t start_day = floorDiv(start, kDayMs);
  const int64_t start_minute_of_day = (start - start_day * kDayMs) / kMinuteMs;
  for (int64_t day = start_day; day <= start_day + kDaysIn400Years; ++day) {
    if (!dayMatches(spec, day)) continue;
    const int64_t from = day == start_day ? start_minute_of_day : 0;
    for (int64_t minute_of_day = from; minute_of_day < 24 * 60; ++minute_of_day) {
      const auto hour = static_cast<size_t>(minute_of_day / 60);
      if (!spec.hours.test(hour)) {
        minute_of_day = static_cast<int64_t>(hour) * 60 + 59;  // skip to the next hour
        continue;
      }
      if (spec.minutes.test(static_cast<size_t>(minute_of_day % 60))) {
        return day * kDayMs + minute_of_day * kMinuteMs;
      }
    }
  }
  return -1;
}

}  // namespace fabric_chaos::scenarios::schedule
