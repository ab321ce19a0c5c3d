#include "scenarios/schedule/cron.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fabric_chaos::scenarios::schedule {
namespace {

// "2024-02-29 13:05" (UTC) as Unix epoch milliseconds, through libc rather than the code under
// test.
int64_t utcMs(const std::string& text) {
  struct tm tm = {};
  const char* end = strptime(text.c_str(), "%Y-%m-%d %H:%M", &tm);
  EXPECT_TRUE(end != nullptr && *end == '\0') << text;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

std::string utcText(int64_t ms) {
  if (ms < 0) return "never";
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm tm = {};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M", &tm);
  std::string out = buffer;
  if (ms % 60000 != 0) out += " +" + std::to_string(ms % 60000) + "ms";
  return out;
}

template <size_t N>
std::vector<int> bitsOf(const std::bitset<N>& bits) {
  std::vector<int> out;
  for (size_t i = 0; i < N; ++i) {
    if (bits.test(i)) out.push_back(static_cast<int>(i));
  }
  return out;
}

TEST(CronParseTest, FieldSets) {
  struct Case {
    const char* text;
    std::vector<int> minutes, hours, dom, months, dow;
    bool dom_star, dow_star;
  };
  const std::vector<int> all_hours = [] {
    std::vector<int> v;
    for (int i = 0; i < 24; ++i) v.push_back(i);
    return v;
  }();
  const std::vector<int> all_dom = [] {
    std::vector<int> v;
    for (int i = 1; i <= 31; ++i) v.push_back(i);
    return v;
  }();
  const std::vector<int> all_months = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<int> all_dow = {0, 1, 2, 3, 4, 5, 6};
  const Case cases[] = {
      {"0 0 * * *", {0}, {0}, all_dom, all_months, all_dow, true, true},
      {"*/15 9-17 * * 1-5",
       {0, 15, 30, 45},
       {9, 10, 11, 12, 13, 14, 15, 16, 17},
       all_dom,
       all_months,
       {1, 2, 3, 4, 5},
       true,
       false},
      {"5,10,50-52 1-10/3 1,15 */4 *",
       {5, 10, 50, 51, 52},
       {1, 4, 7, 10},
       {1, 15},
       {1, 5, 9},
       all_dow,
       false,
       true},
      {"10/20 * * * *", {10, 30, 50}, all_hours, all_dom, all_months, all_dow, true, true},
      // Names, any case; 7 is Sunday; a range ending at 7 folds onto 0.
      {"0 12 * JAN,jul-Sep sun", {0}, {12}, all_dom, {1, 7, 8, 9}, {0}, true, false},
      {"0 12 * * 7", {0}, {12}, all_dom, all_months, {0}, true, false},
      {"0 12 * * 5-7", {0}, {12}, all_dom, all_months, {0, 5, 6}, true, false},
      {"0 12 * * mon-fri/2", {0}, {12}, all_dom, all_months, {1, 3, 5}, true, false},
      {"0 12 * * */2", {0}, {12}, all_dom, all_months, {0, 2, 4, 6}, true, true},
      {"  1\t2   3 4 5 ", {1}, {2}, {3}, {4}, {5}, false, false},
      {"@hourly", {0}, all_hours, all_dom, all_months, all_dow, true, true},
      {"@WEEKLY", {0}, {0}, all_dom, all_months, {0}, true, false},
      {"@yearly", {0}, {0}, {1}, {1}, all_dow, false, true},
  };
  for (const Case& c : cases) {
    auto spec = parseCron(c.text);
    ASSERT_TRUE(spec.isOk()) << c.text << ": " << spec.status().toString();
    EXPECT_EQ(spec->text, c.text);
    EXPECT_EQ(bitsOf(spec->minutes), c.minutes) << c.text;
    EXPECT_EQ(bitsOf(spec->hours), c.hours) << c.text;
    EXPECT_EQ(bitsOf(spec->days_of_month), c.dom) << c.text;
    EXPECT_EQ(bitsOf(spec->months), c.months) << c.text;
    EXPECT_EQ(bitsOf(spec->days_of_week), c.dow) << c.text;
    EXPECT_EQ(spec->dom_star, c.dom_star) << c.text;
    EXPECT_EQ(spec->dow_star, c.dow_star) << c.text;
  }
}

TEST(CronParseTest, ErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"0 25 * * *", "cron field 2 (hour): 25 is out of range 0-23"},
      {"60 * * * *", "cron field 1 (minute): 60 is out of range 0-59"},
      {"* * 0 * *", "cron field 3 (day-of-month): 0 is out of range 1-31"},
      {"* * * 13 *", "cron field 4 (month): 13 is out of range 1-12"},
      {"* * * * 8", "cron field 5 (day-of-week): 8 is out of range 0-7"},
      {"* * * * *", nullptr},
      {"* * * *", "cron: expected 5 fields (minute hour day-of-month month day-of-week), got 4"},
      {"* * * * * *", "got 6"},
      {"", "got 0"},
      {"*/0 * * * *", "cron field 1 (minute): step 0 is out of range 1-59"},
      {"*/x * * * *", "cron field 1 (minute): step \"x\" is not a number"},
      {"*/ * * * *", "cron field 1 (minute): step \"\" is not a number"},
      {"5-1 * * * *", "cron field 1 (minute): range 5-1 goes backwards"},
      {"1,,2 * * * *", "cron field 1 (minute): empty list item"},
      {"a * * * *", "cron field 1 (minute): \"a\" is not a number"},
      {"1x * * * *", "cron field 1 (minute): \"1x\" is not a number"},
      {"- * * * *", "cron field 1 (minute): empty value"},
      {"* * * foo *", "cron field 4 (month): \"foo\" is not a number or a name (jan-dec)"},
      {"* * * * monday", "cron field 5 (day-of-week): \"monday\" is not a number or a name"},
      {"* * mon * *", "cron field 3 (day-of-month): \"mon\" is not a number"},
      {"0 0 30 2 *", "never fires"},
      {"0 0 31 4,6,9,11 *", "never fires"},
      {"@reboot", "cron: unknown macro @reboot"},
  };
  for (const Case& c : cases) {
    auto spec = parseCron(c.text);
    if (c.message == nullptr) {
      EXPECT_TRUE(spec.isOk()) << c.text << ": " << spec.status().toString();
      continue;
    }
    ASSERT_FALSE(spec.isOk()) << c.text;
    EXPECT_EQ(spec.status().code(), core::StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(spec.status().message().find(c.message), std::string::npos)
        << c.text << ": " << spec.status().message();
  }
}

TEST(CronNextFireTest, Table) {
  struct Case {
    const char* cron;
    const char* after;  // UTC
    int64_t after_extra_ms;
    const char* expected;
  };
  const Case cases[] = {
      // Strictly after: a fire time equal to `after` is not returned again.
      {"* * * * *", "2024-05-01 10:00", 0, "2024-05-01 10:01"},
      {"* * * * *", "2024-05-01 10:00", 59'999, "2024-05-01 10:01"},
      {"*/30 * * * *", "2024-05-01 10:29", 30'000, "2024-05-01 10:30"},
      {"*/30 * * * *", "2024-05-01 10:30", 0, "2024-05-01 11:00"},
      {"0 3 * * *", "2024-05-01 03:00", 0, "2024-05-02 03:00"},
      {"0 3 * * *", "2024-05-01 02:59", 0, "2024-05-01 03:00"},
      // Hour rollover and day rollover.
      {"15 */6 * * *", "2024-05-01 18:16", 0, "2024-05-02 00:15"},
      // Month and year rollover.
      {"0 0 1 * *", "2024-12-15 00:00", 0, "2025-01-01 00:00"},
      {"@yearly", "2024-01-01 00:00", 0, "2025-01-01 00:00"},
      // Leap day: only in leap years.
      {"0 12 29 2 *", "2024-03-01 00:00", 0, "2028-02-29 12:00"},
      {"0 12 29 2 *", "2024-02-28 00:00", 0, "2024-02-29 12:00"},
      // 31st only in months that have one.
      {"0 0 31 * *", "2024-04-01 00:00", 0, "2024-05-31 00:00"},
      // Day of week: 2024-05-01 is a Wednesday.
      {"0 9 * * mon-fri", "2024-05-03 10:00", 0, "2024-05-06 09:00"},
      {"0 9 * * 0", "2024-05-01 00:00", 0, "2024-05-05 09:00"},
      {"0 9 * * 7", "2024-05-01 00:00", 0, "2024-05-05 09:00"},
      // Vixie rule: both restricted -> either matches. The 13th or any Friday: Fri 2024-05-03.
      {"0 0 13 * 5", "2024-05-01 00:00", 0, "2024-05-03 00:00"},
      {"0 0 13 * 5", "2024-05-11 00:00", 0, "2024-05-13 00:00"},
      // Day-of-month starting with '*' does not restrict: both must match (a Friday that is
      // an odd day).
      {"0 0 */2 * 5", "2024-05-01 00:00", 0, "2024-05-03 00:00"},
      {"0 0 */2 * 5", "2024-05-04 00:00", 0, "2024-05-17 00:00"},
      // Month restriction with day of week: first Monday in June.
      {"0 0 * jun mon", "2024-05-01 00:00", 0, "2024-06-03 00:00"},
      // Before the epoch.
      {"0 0 * * *", "1969-12-31 12:00", 0, "1970-01-01 00:00"},
  };
  for (const Case& c : cases) {
    auto spec = parseCron(c.cron);
    ASSERT_TRUE(spec.isOk()) << c.cron << ": " << spec.status().toString();
    const int64_t got = nextFire(*spec, utcMs(c.after) + c.after_extra_ms);
    EXPECT_EQ(utcText(got), c.expected) << c.cron << " after " << c.after;
    EXPECT_EQ(got % 60'000, 0) << c.cron;
  }
}

TEST(CronNextFireTest, ConsecutiveFiresOfAStepScheduleAreEvenlySpaced) {
  auto spec = parseCron("*/5 * * * *");
  ASSERT_TRUE(spec.isOk());
  int64_t t = utcMs("2024-12-31 23:41");
  std::vector<std::string> fires;
  for (int i = 0; i < 5; ++i) {
    t = nextFire(*spec, t);
    fires.push_back(utcText(t));
  }
  EXPECT_EQ(fires,
            (std::vector<std::string>{"2024-12-31 23:45", "2024-12-31 23:50", "2024-12-31 23:55",
                                      "2025-01-01 00:00", "2025-01-01 00:05"}));
}

TEST(CronNextFireTest, HandBuiltSpecThatNeverFiresIsMinusOne) {
  CronSpec spec;  // all bitsets empty
  EXPECT_EQ(nextFire(spec, 0), -1);
}

}  // namespace
}  // namespace fabric_chaos::scenarios::schedule
