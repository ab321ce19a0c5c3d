// `fabric-chaos exec-rank` as a process, as an agent runs it: real commands (/bin/sh), their
// environment read back from a file they write, and the report lines decoded with
// workload/report.h. Needs no root: the commands only print, sleep and exit.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "workload/report.h"

namespace fabric_chaos::workload {
namespace {

// Running, not merely a zombie nobody has reaped yet (an orphan waits for init here).
bool running(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

struct Outcome {
  int exit_code = -1;
  std::vector<ReportLine> lines;
};

class ExecRankProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* binary = std::getenv("FC_BINARY");
    ASSERT_NE(binary, nullptr) << "FC_BINARY names the fabric-chaos binary (ctest sets it)";
    binary_ = binary;
    char pattern[] = "/tmp/fc-exec-rank-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs exec-rank with `args`; after `term_after_ms` (0: never) it gets SIGTERM, as the agent
  // sends at the end of a run.
  Outcome run(const std::vector<std::string>& args, int term_after_ms = 0) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      std::vector<char*> argv;
      std::string sub = "exec-rank";
      argv.push_back(binary_.data());
      argv.push_back(sub.data());
      std::vector<std::string> copy = args;
      for (std::string& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary_.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    std::thread terminator;
    if (term_after_ms > 0) {
      terminator = std::thread([pid, term_after_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(term_after_ms));
        kill(pid, SIGTERM);
      });
    }
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = read(out[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (terminator.joinable()) terminator.join();
    Outcome outcome;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      auto decoded = decodeReportLine(line);
      EXPECT_TRUE(decoded.isOk()) << line;
      if (decoded.isOk()) outcome.lines.push_back(decoded.value());
    }
    return outcome;
  }

  static std::vector<RawSample> samples(const Outcome& o) {
    std::vector<RawSample> all;
    for (const ReportLine& l : o.lines) {
      if (l.type == ReportLine::Type::kSamples)
        all.insert(all.end(), l.samples.begin(), l.samples.end());
    }
    return all;
  }
  static const ReportLine* find(const Outcome& o, ReportLine::Type type) {
    for (const ReportLine& l : o.lines) {
      if (l.type == type) return &l;
    }
    return nullptr;
  }
  std::string readFile(const std::string& name) {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string binary_;
  std::string dir_;
};

TEST_F(ExecRankProcess, StepsBecomeSamplesAndTheRendezvousIsInTheEnvironment) {
  const std::string script = "env > " + dir_ +
                             "/env; for i in 0 1 2; do echo \"{\\\"step\\\": $i, "
                             "\\\"duration_ms\\\": 4.5, \\\"bytes\\\": 1000}\"; echo not a step; "
                             "done; sleep 30 & echo $! > " +
                             dir_ + "/sleep; wait";
  const Outcome o =
      run({"--rank", "1", "--world", "3", "--master", "10.0.0.1:29500", "--host-addr", "10.0.0.2",
           "--ifname", "eth0", "--env", "GLOO_SOCKET_IFNAME=eth0", "--", "/bin/sh", "-c", script},
          1500);
  EXPECT_EQ(o.exit_code, 0) << "stopped by SIGTERM is a clean end";
  ASSERT_FALSE(o.lines.empty());
  EXPECT_EQ(o.lines.front().type, ReportLine::Type::kReady);
  const auto all = samples(o);
  ASSERT_EQ(all.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(all[i].iteration, i);
    EXPECT_EQ(all[i].duration_ns, 4'500'000);
    EXPECT_EQ(all[i].bytes, 1000);
  }
  EXPECT_EQ(find(o, ReportLine::Type::kEvent), nullptr) << "no rank_error for a stopped rank";
  const ReportLine* done = find(o, ReportLine::Type::kDone);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->iterations, 3);
  const std::string env = readFile("env");
  for (const char* expected :
       {"RANK=1\n", "WORLD_SIZE=3\n", "LOCAL_RANK=0\n", "MASTER_ADDR=10.0.0.1\n",
        "MASTER_PORT=29500\n", "FABRIC_CHAOS_HOST_ADDR=10.0.0.2\n", "FABRIC_CHAOS_IFNAME=eth0\n",
        "GLOO_SOCKET_IFNAME=eth0\n"}) {
    EXPECT_NE(env.find(expected), std::string::npos) << expected << " missing from:\n" << env;
  }
  // The shell's own child, which held the output pipe open, ended with it: the stop reached the
  // command's whole process group.
  const pid_t sleeper = std::atoi(readFile("sleep").c_str());
  ASSERT_GT(sleeper, 0);
  EXPECT_FALSE(running(sleeper)) << "the command's child outlived the rank";
}

TEST_F(ExecRankProcess, AnExitIsARankErrorWithTheEndOfStderr) {
  const Outcome o =
      run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:29500", "--", "/bin/sh", "-c",
           "echo '{\"duration_ms\": 2}'; echo 'RuntimeError: Timed out waiting "
           "20000ms for recv operation' >&2; exit 3"});
  EXPECT_EQ(o.exit_code, 3);
  const ReportLine* error = find(o, ReportLine::Type::kEvent);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->kind, kEventRankError);
  EXPECT_EQ(error->detail["reason"], "exited");
  EXPECT_EQ(error->detail["exit_code"], 3);
  EXPECT_EQ(error->detail["steps"], 1);
  ASSERT_EQ(error->detail["stderr_tail"].size(), 1u);
  EXPECT_EQ(error->detail["stderr_tail"][0],
            "RuntimeError: Timed out waiting 20000ms for recv operation");
  EXPECT_EQ(find(o, ReportLine::Type::kDone)->iterations, 1);
}

TEST_F(ExecRankProcess, ASilentJobIsKilledAndSaidToHaveHung) {
  const Outcome o = run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:29500",
                         "--silence-ms", "400", "--", "/bin/sh", "-c",
                         "echo $$ > " + dir_ + "/pid; echo '{\"duration_ms\": 1}'; exec sleep 60"});
  EXPECT_NE(o.exit_code, 0);
  const ReportLine* error = find(o, ReportLine::Type::kEvent);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->detail["reason"], "silent");
  EXPECT_NE(error->detail["message"].get<std::string>().find("no step for 400 ms"),
            std::string::npos);
  const pid_t job = std::atoi(readFile("pid").c_str());
  ASSERT_GT(job, 0);
  EXPECT_FALSE(running(job)) << "the hung command is still running";
}

TEST_F(ExecRankProcess, AJobThatPrintsNoStepSaysWhatItPrintedInstead) {
  const Outcome o = run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:29500", "--",
                         "/bin/sh", "-c", "echo 'step=1 took 3ms'; exit 0"});
  EXPECT_EQ(o.exit_code, 1) << "a job that ends by itself before the run is a rank death";
  const ReportLine* error = find(o, ReportLine::Type::kEvent);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->detail["exit_code"], 0);
  EXPECT_EQ(error->detail["steps"], 0);
  EXPECT_EQ(error->detail["last_stdout_line"], "step=1 took 3ms");
  EXPECT_EQ(find(o, ReportLine::Type::kReady), nullptr);
}

TEST_F(ExecRankProcess, ARegexReadsAnotherLogFormat) {
  const Outcome o =
      run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:29500", "--format", "regex",
           "--pattern", R"(^iter (?<step>\d+) took (?<duration_s>[0-9.]+) s$)", "--", "/bin/sh",
           "-c", "echo 'iter 7 took 0.25 s'; echo 'iter 8 took 0.5 s'; sleep 30"},
          1500);
  const auto all = samples(o);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].iteration, 7);
  EXPECT_EQ(all[0].duration_ns, 250'000'000);
  EXPECT_EQ(all[1].iteration, 8);
  EXPECT_EQ(all[1].bytes, 0);
}

TEST_F(ExecRankProcess, AShippedScriptIsNamedByAPathTheCommandCanRead) {
  // grep counts a line only the pytorch-ddp script has; the count reads as one step's duration.
  const Outcome o =
      run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:29500", "--format", "regex",
           "--pattern", R"(^(?<duration_ms>\d+)$)", "--script", "pytorch-ddp", "--", "/bin/sh",
           "-c", "grep -c 'DistributedDataParallel(model)' \"$0\"; sleep 30", "{script}"},
          1500);
  const auto all = samples(o);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].duration_ns, 1'000'000);
}

TEST_F(ExecRankProcess, BadArgumentsAreAUsageError) {
  EXPECT_EQ(run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:1"}).exit_code, 2);
  EXPECT_EQ(run({"--rank", "2", "--world", "2", "--master", "127.0.0.1:1", "--", "true"}).exit_code,
            2);
  EXPECT_EQ(run({"--rank", "0", "--world", "2", "--master", "127.0.0.1:1", "--format", "regex",
                 "--pattern", "(?<step>\\d+)", "--", "true"})
                .exit_code,
            2)
      << "a pattern without a duration group";
}

}  // namespace
}  // namespace fabric_chaos::workload
