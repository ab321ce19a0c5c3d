#include "scenarios/schedule/scheduler.h"

#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/fakes/fake_services.h"
#include "tests/scenarios/schedule/schedule_test_support.h"

namespace fabric_chaos::scenarios::schedule {
namespace {

using test_support::scenarioDoc;
using test_support::StoreBackedRunService;

int64_t utcMs(const std::string& text) {
  struct tm tm = {};
  const char* end = strptime(text.c_str(), "%Y-%m-%d %H:%M:%S", &tm);
  EXPECT_TRUE(end != nullptr && *end == '\0') << text;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

TEST(ScheduleNextFireTest, FromCreationOrLastFire) {
  struct Case {
    const char* what;
    const char* cron;
    bool enabled;
    const char* created;
    const char* last_fired;  // "" = never
    const char* expected;    // "" = nullopt
  };
  const Case cases[] = {
      {"never fired: after creation", "*/30 * * * *", true, "2024-05-01 10:10:00", "",
       "2024-05-01 10:30:00"},
      {"after the last fire", "*/30 * * * *", true, "2024-05-01 10:10:00", "2024-05-01 12:30:05",
       "2024-05-01 13:00:00"},
      {"disabled", "*/30 * * * *", false, "2024-05-01 10:10:00", "", ""},
      {"bad cron", "61 * * * *", true, "2024-05-01 10:10:00", "", ""},
  };
  for (const Case& c : cases) {
    store::ScheduleRecord s;
    s.cron = c.cron;
    s.enabled = c.enabled;
    s.created_ms = utcMs(c.created);
    s.last_fired_ms = std::string(c.last_fired).empty() ? 0 : utcMs(c.last_fired);
    auto next = scheduleNextFireMs(s);
    if (std::string(c.expected).empty()) {
      EXPECT_FALSE(next.has_value()) << c.what;
    } else {
      ASSERT_TRUE(next.has_value()) << c.what;
      EXPECT_EQ(*next, utcMs(c.expected)) << c.what;
    }
  }
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::Store::open(":memory:");
    ASSERT_TRUE(store.isOk()) << store.status().toString();
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->putScenario("a", scenarioDoc("a"), false).isOk());
    ASSERT_TRUE(store_->putSuite("acc", json{{"name", "acc"}, {"scenarios", {"a"}}}, false).isOk());
    runs_ = std::make_unique<StoreBackedRunService>(store_.get());
    fabrics_.add(fakes::FakeFabricCatalog::netnsLab());
    SchedulerDeps deps;
    deps.submit.store = store_.get();
    deps.submit.runs = runs_.get();
    deps.submit.fabrics = &fabrics_;
    deps.submit.kinds = test_support::testKinds;
    deps.suites = &suites_;
    deps.wall_now_ms = [this] { return fake_now_.load(); };
    SchedulerOptions options;
    options.tick_ms = 5;
    scheduler_ = std::make_unique<Scheduler>(deps, options);
  }

  int64_t addSchedule(const std::string& cron, const std::string& scenario,
                      const std::string& suite, const std::string& created, bool enabled = true) {
    store::ScheduleRecord s;
    s.cron = cron;
    s.scenario = scenario;
    s.suite = suite;
    s.enabled = enabled;
    s.created_ms = utcMs(created);
    auto id = store_->createSchedule(s);
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  store::ScheduleRecord schedule(int64_t id) {
    auto s = store_->getSchedule(id);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? *s : store::ScheduleRecord{};
  }

  std::unique_ptr<store::Store> store_;
  std::unique_ptr<StoreBackedRunService> runs_;
  fakes::FakeFabricCatalog fabrics_;
  fakes::FakeSuiteService suites_;
  std::atomic<int64_t> fake_now_{0};
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerTest, FiresAScenarioWhenDueAndOnlyThen) {
  const int64_t id = addSchedule("*/5 * * * *", "a", "", "2024-05-01 10:00:00");
  struct Tick {
    const char* at;
    int fired;
    const char* last_fired;  // after this tick
  };
  const Tick ticks[] = {
      {"2024-05-01 10:04:59", 0, ""},
      {"2024-05-01 10:05:00", 1, "2024-05-01 10:05:00"},
      {"2024-05-01 10:05:01", 0, "2024-05-01 10:05:00"},
      {"2024-05-01 10:09:59", 0, "2024-05-01 10:05:00"},
      {"2024-05-01 10:10:02", 1, "2024-05-01 10:10:02"},
  };
  for (const Tick& t : ticks) {
    EXPECT_EQ(scheduler_->tick(utcMs(t.at)), t.fired) << t.at;
    const int64_t expected = std::string(t.last_fired).empty() ? 0 : utcMs(t.last_fired);
    EXPECT_EQ(schedule(id).last_fired_ms, expected) << t.at;
  }
  auto submitted = runs_->submitted();
  ASSERT_EQ(submitted.size(), 2u);
  EXPECT_EQ(submitted[0].scenario, "a");
  EXPECT_EQ(submitted[0].fabric, "netns-lab");
  EXPECT_EQ(schedule(id).last_result, "run " + std::to_string(submitted[1].id));
}

TEST_F(SchedulerTest, MissedFiresWhileDownFireOnce) {
  const int64_t id = addSchedule("*/5 * * * *", "a", "", "2024-05-01 10:00:00");
  ASSERT_TRUE(store_->markScheduleFired(id, utcMs("2024-05-01 10:05:00"), "run 0").isOk());
  // Serve was down from 10:06 to 12:00:30: 23 slots passed.
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 12:00:30")), 1);
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 12:00:31")), 0);
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 12:04:59")), 0);
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 12:05:00")), 1);
  EXPECT_EQ(runs_->submitted().size(), 2u);
}

TEST_F(SchedulerTest, FiresSuitesAndSkipsDisabled) {
  const int64_t suite_id = addSchedule("0 3 * * *", "", "acc", "2024-05-01 10:00:00");
  const int64_t disabled = addSchedule("* * * * *", "a", "", "2024-05-01 10:00:00", false);
  suites_.setNextId(7);
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-02 02:59:00")), 0);
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-02 03:00:00")), 1);
  EXPECT_EQ(schedule(suite_id).last_result, "suite run 7");
  auto submissions = suites_.submissions();
  ASSERT_EQ(submissions.size(), 1u);
  EXPECT_EQ(submissions[0].suite_name, "acc");
  EXPECT_EQ(submissions[0].suite["scenarios"], json::array({"a"}));
  EXPECT_EQ(schedule(disabled).last_fired_ms, 0);
  EXPECT_TRUE(runs_->submitted().empty());
}

TEST_F(SchedulerTest, FailedStartsAreRecordedAndNotRetriedEveryTick) {
  struct Case {
    const char* what;
    const char* scenario;
    const char* suite;
    const char* result_part;
  };
  const Case cases[] = {
      {"deleted scenario", "gone", "", "scenario gone not found"},
      {"deleted suite", "", "gone", "suite gone not found"},
  };
  std::vector<int64_t> ids;
  for (const Case& c : cases)
    ids.push_back(addSchedule("* * * * *", c.scenario, c.suite, "2024-05-01 10:00:00"));
  runs_->failSubmitOn(1, core::Status(core::StatusCode::kUnavailable, "engine stopped"));
  const int64_t failing = addSchedule("* * * * *", "a", "", "2024-05-01 10:00:00");
  suites_.failSubmitOn(1, core::Status(core::StatusCode::kUnavailable, "runner stopped"));
  const int64_t failing_suite = addSchedule("* * * * *", "", "acc", "2024-05-01 10:00:00");

  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 10:01:00")), 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    const store::ScheduleRecord s = schedule(ids[i]);
    EXPECT_EQ(s.last_fired_ms, utcMs("2024-05-01 10:01:00")) << cases[i].what;
    EXPECT_NE(s.last_result.find(cases[i].result_part), std::string::npos)
        << cases[i].what << ": " << s.last_result;
  }
  EXPECT_NE(schedule(failing).last_result.find("scenario a: cannot start a run: engine stopped"),
            std::string::npos)
      << schedule(failing).last_result;
  EXPECT_EQ(schedule(failing_suite).last_result, "suite acc: runner stopped");
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 10:01:30")), 0);
  EXPECT_EQ(scheduler_->tick(utcMs("2024-05-01 10:02:00")), 4);
  EXPECT_EQ(runs_->submitted().size(), 1u);  // the second try of "a" went through
}

TEST_F(SchedulerTest, ThreadTicksWithTheInjectedClock) {
  const int64_t id = addSchedule("*/5 * * * *", "a", "", "2024-05-01 10:00:00");
  fake_now_ = utcMs("2024-05-01 10:01:00");
  scheduler_->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(schedule(id).last_fired_ms, 0) << "not due yet";
  fake_now_ = utcMs("2024-05-01 10:05:00");
  for (int i = 0; i < 2000 && schedule(id).last_fired_ms == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(schedule(id).last_fired_ms, utcMs("2024-05-01 10:05:00"));
  scheduler_->shutdown();
  scheduler_->shutdown();  // idempotent
  EXPECT_EQ(runs_->submitted().size(), 1u);
}

}  // namespace
}  // namespace fabric_chaos::scenarios::schedule
