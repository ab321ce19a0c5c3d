// sys::Emitters with real processes (/bin/sh scripts that print JSON lines): start waits for the
// first report and is idempotent, stop gets the final report, an emitter that dies at once fails
// its start with its stderr, and a later incarnation stops an emitter it only knows from its
// record, but never a process that merely reuses the recorded pid.

#include "injectors/sys/emitters.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "injectors/sys/proc_stat.h"

namespace fabric_chaos::sys {
namespace {

namespace fs = std::filesystem;
using core::StatusCode;

// Prints {"n":0} at once, then {"n":i} every 20 ms; on SIGTERM {"final":true,"n":i} and exit 0.
std::vector<std::string> counter() {
  return {"/bin/sh", "-c",
          "i=0; trap 'echo \"{\\\"final\\\":true,\\\"n\\\":$i}\"; exit 0' TERM; "
          "while :; do echo \"{\\\"n\\\":$i}\"; i=$((i+1)); sleep 0.02; done"};
}

bool alive(pid_t pid) {
  auto start = processStartTime(pid);
  if (!start) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find(") Z") == std::string::npos;
}

class EmittersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fc-emitters-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<Emitters> make() {
    return makeProcessEmitters(dir_.string(), makeForkExecLauncher());
  }
  size_t records() {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) n += e.path().extension() == ".json";
    return n;
  }
  fs::path dir_;
  static inline int counter_ = 0;
};

TEST_F(EmittersTest, StartWaitsForTheFirstReportIsIdempotentAndStopGetsTheLast) {
  auto emitters = make();
  ASSERT_TRUE(emitters->start({"storm a", counter(), "", 3000}).isOk());
  auto first = emitters->state("storm a");
  ASSERT_TRUE(first.isOk());
  EXPECT_TRUE(first->running);
  EXPECT_GE(first->reports, 1);
  EXPECT_TRUE(first->last_report.contains("n")) << first->last_report;
  EXPECT_EQ(records(), 1u);

  ASSERT_TRUE(emitters->start({"storm a", counter(), "", 3000}).isOk());
  EXPECT_EQ(emitters->state("storm a")->pid, first->pid) << "the same key: nothing new started";

  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto later = emitters->state("storm a");
  EXPECT_GT(later->last_report.value("n", 0), first->last_report.value("n", 0));

  auto stopped = emitters->stop("storm a", 2000);
  ASSERT_TRUE(stopped.isOk());
  EXPECT_FALSE(stopped->running);
  EXPECT_EQ(stopped->exit_code, 0) << "it caught SIGTERM and finished";
  EXPECT_EQ(stopped->last_report.value("final", false), true) << stopped->last_report;
  EXPECT_FALSE(alive(first->pid));
  EXPECT_EQ(records(), 0u);
  EXPECT_EQ(emitters->state("storm a").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(emitters->stop("storm a", 100).isOk()) << "stopping twice is fine";
}

TEST_F(EmittersTest, AnEmitterThatDiesAtOnceFailsItsStartWithItsStderr) {
  auto emitters = make();
  auto status = emitters->start(
      {"broken", {"/bin/sh", "-c", "echo 'cannot open raw socket on eth9' >&2; exit 1"}, "", 3000});
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("cannot open raw socket on eth9"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("status 1"), std::string::npos) << status.message();
  EXPECT_EQ(records(), 0u);

  auto silent = emitters->start({"silent", {"/bin/sh", "-c", "exec sleep 30"}, "", 300});
  EXPECT_EQ(silent.code(), StatusCode::kUnavailable);
  EXPECT_NE(silent.message().find("reported nothing within 300 ms"), std::string::npos)
      << silent.message();
  EXPECT_EQ(records(), 0u) << "a start that failed leaves nothing running";
}

TEST_F(EmittersTest, DestroyingTheEmittersStopsWhatTheyStarted) {
  pid_t pid = 0;
  {
    auto emitters = make();
    ASSERT_TRUE(emitters->start({"storm d", counter(), "", 3000}).isOk());
    pid = emitters->state("storm d")->pid;
    EXPECT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid));
  EXPECT_EQ(records(), 0u);
}

// A crashed incarnation leaves a record and a running process. Stand-ins: `sleep 60` processes
// recorded the way an emitter is.
TEST_F(EmittersTest, ALaterIncarnationStopsWhatItsRecordNamesAndNothingElse) {
  std::string record_name;
  nlohmann::json record;
  {
    auto probe = make();
    ASSERT_TRUE(probe->start({"storm b", counter(), "", 3000}).isOk());
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".json") record_name = e.path().filename();
    }
    ASSERT_FALSE(record_name.empty());
    std::ifstream in(dir_ / record_name);
    record = nlohmann::json::parse(in);
    EXPECT_EQ(record["key"], "storm b");
    EXPECT_EQ(record["pid"], probe->state("storm b")->pid);
  }
  auto launcher = makeForkExecLauncher();
  auto recordStandIn = [&](const std::string& file, const std::string& key, int64_t start_skew) {
    auto child = launcher->spawn({{"/bin/sleep", "60"}, "", false, ""});
    EXPECT_TRUE(child.isOk());
    nlohmann::json doc = record;
    doc["key"] = key;
    doc["pid"] = (*child)->pid();
    doc["start_time"] = static_cast<int64_t>(*processStartTime((*child)->pid())) + start_skew;
    std::ofstream(dir_ / file) << doc.dump();
    return std::move(child.value());
  };

  auto second = make();
  // stop(key) finds it through its record.
  auto stray = recordStandIn(record_name, "storm b", 0);
  auto stopped = second->stop("storm b", 2000);
  ASSERT_TRUE(stopped.isOk());
  EXPECT_EQ(stopped->pid, stray->pid());
  auto ended = stray->wait(3000);
  ASSERT_TRUE(ended.isOk());
  EXPECT_EQ(ended.value(), 128 + SIGTERM);
  EXPECT_EQ(records(), 0u);

  // The start-up sweep stops every recorded one, and only a process that is still the one
  // recorded: another start time means the pid was reused, and it is never signalled.
  auto sweep = recordStandIn(record_name, "storm b", 0);
  auto bystander = recordStandIn("other-0000000000000000.json", "storm c", 1);
  EXPECT_EQ(second->stopRecorded(2000), 1);
  ended = sweep->wait(3000);
  ASSERT_TRUE(ended.isOk());
  EXPECT_EQ(ended.value(), 128 + SIGTERM);
  EXPECT_TRUE(alive(bystander->pid()));
  EXPECT_EQ(records(), 0u);
  (void)bystander->signal(SIGKILL);
}

}  // namespace
}  // namespace fabric_chaos::sys
