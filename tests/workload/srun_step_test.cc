// The Slurm job step a run submits: what srun is told, the multi-prog file whose lines carry each
// task's arguments intact, the hostfile that pins task i to rank i's node, and the refusals.

#include "workload/slurm/srun_step.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace fabric_chaos::workload {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SrunStepSpec twoRanks() {
  SrunStepSpec spec;
  spec.job_name = "fabric-chaos-run-7";
  spec.multi_prog_path = "/run/fabric-chaos/slurm-steps/run-7.conf";
  spec.tasks = {{"h2", "/usr/bin/fabric-chaos", "exec-rank", {"--rank", "0"}},
                {"h0", "/usr/bin/fabric-chaos", "exec-rank", {"--rank", "1"}}};
  return spec;
}

TEST(SrunStepTest, PinsTaskIToItsNodeAndLabelsOutput) {
  auto step = buildSrunStep(twoRanks());
  ASSERT_TRUE(step.isOk()) << step.status().toString();
  EXPECT_THAT(step->argv, ElementsAre("srun", "--job-name=fabric-chaos-run-7", "--ntasks=2",
                                      "--ntasks-per-node=1", "--distribution=arbitrary", "--label",
                                      "--wait=30", "--kill-on-bad-exit=0", "--multi-prog",
                                      "/run/fabric-chaos/slurm-steps/run-7.conf"));
  EXPECT_EQ(step->hostfile, "h2\nh0\n");
  EXPECT_EQ(step->multi_prog, "0 /usr/bin/fabric-chaos exec-rank --args-hex " +
                                  encodeTaskArgs({"--rank", "0"}) +
                                  "\n1 /usr/bin/fabric-chaos exec-rank --args-hex " +
                                  encodeTaskArgs({"--rank", "1"}) + "\n");
}

TEST(SrunStepTest, PartitionReservationAndExtraArgsGoBeforeTheProgramFile) {
  SrunStepSpec spec = twoRanks();
  spec.partition = "gpu";
  spec.reservation = "chaos_window";
  spec.wait_s = 12;
  spec.extra_args = {"--account=netops", "--time=10"};
  auto step = buildSrunStep(spec);
  ASSERT_TRUE(step.isOk()) << step.status().toString();
  const auto& argv = step->argv;
  auto at = [&](const std::string& arg) {
    return std::find(argv.begin(), argv.end(), arg) - argv.begin();
  };
  EXPECT_LT(at("--partition=gpu"), at("--multi-prog"));
  EXPECT_LT(at("--reservation=chaos_window"), at("--multi-prog"));
  EXPECT_LT(at("--account=netops"), at("--multi-prog"));
  EXPECT_LT(at("--time=10"), at("--multi-prog"));
  EXPECT_LT(at("--wait=12"), static_cast<long>(argv.size()));
}

TEST(SrunStepTest, ArgumentsSurviveEveryCharacterSrunWouldInterpret) {
  const std::vector<std::string> args = {
      "exec-rank",   "--pattern",         R"(step (?<step>\d+) took (?<duration_ms>[0-9.]+) ms)",
      "--env",       "A='q\" %t %o \\n'", "",
      "--",          "python3",           "-c",
      "print('a b')"};
  const std::string hex = encodeTaskArgs(args);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  auto back = decodeTaskArgs(hex);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, args);
  EXPECT_FALSE(decodeTaskArgs("6").isOk());
  EXPECT_FALSE(decodeTaskArgs("zz00").isOk());
  EXPECT_FALSE(decodeTaskArgs("6161").isOk()) << "an unterminated last argument";
  EXPECT_TRUE(decodeTaskArgs("").isOk());
}

TEST(SrunStepTest, RefusesWhatWouldMisplaceOrMisreadTasks) {
  SrunStepSpec spec = twoRanks();
  spec.extra_args = {"--nodelist=h0,h1"};
  auto step = buildSrunStep(spec);
  ASSERT_FALSE(step.isOk());
  EXPECT_THAT(step.status().message(), HasSubstr("--nodelist"));
  for (const char* arg :
       {"-n4", "--ntasks=4", "-w", "--multi-prog", "--label", "-J", "--output=x"}) {
    spec.extra_args = {arg};
    EXPECT_FALSE(buildSrunStep(spec).isOk()) << arg;
  }
  spec = twoRanks();
  spec.tasks[1].node = "h0 h1";
  EXPECT_THAT(buildSrunStep(spec).status().message(), HasSubstr("task 1"));
  spec = twoRanks();
  spec.tasks[0].program = "fabric-chaos";
  EXPECT_THAT(buildSrunStep(spec).status().message(), HasSubstr("absolute path"));
  spec = twoRanks();
  spec.tasks.clear();
  EXPECT_FALSE(buildSrunStep(spec).isOk());
  spec = twoRanks();
  spec.job_name = "run 7";
  EXPECT_FALSE(buildSrunStep(spec).isOk());
  spec = twoRanks();
  spec.partition = "gpu;rm";
  EXPECT_FALSE(buildSrunStep(spec).isOk());
  spec = twoRanks();
  spec.wait_s = 0;
  EXPECT_FALSE(buildSrunStep(spec).isOk());
}

TEST(SrunStepTest, ScancelSignalsOrCancelsByJobName) {
  EXPECT_THAT(scancelArgv("fabric-chaos-run-7", "TERM"),
              ElementsAre("scancel", "--name=fabric-chaos-run-7", "--signal=TERM"));
  EXPECT_THAT(scancelArgv("fabric-chaos-run-7", std::nullopt),
              ElementsAre("scancel", "--name=fabric-chaos-run-7"));
}

}  // namespace
}  // namespace fabric_chaos::workload
