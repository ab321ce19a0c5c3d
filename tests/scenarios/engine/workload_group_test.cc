// startWorkloadGroup with fake agents: each agent starts only its own hosts' ranks, the group is
// one handle over them all, and when an agent cannot be had the ranks already started are
// stopped (their exits reach the listener) and the error names the agent.

#include "scenarios/engine/workload_group.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "tests/fakes/fake_agent.h"
#include "tests/fakes/fake_agent_directory.h"

namespace fabric_chaos::scenarios {
namespace {

using ::testing::HasSubstr;

class ExitListener : public agent::WorkloadListener {
 public:
  void onSamples(const std::vector<core::Sample>&) override {}
  void onEvent(int, double, const std::string&, const nlohmann::json&) override {}
  void onRankExit(int rank, int) override {
    std::lock_guard lock(mu_);
    exited_.insert(rank);
  }
  std::set<int> exited() {
    std::lock_guard lock(mu_);
    return exited_;
  }

 private:
  std::mutex mu_;
  std::set<int> exited_;
};

std::vector<PlannedRank> alternatingRanks(const std::string& agent0, const std::string& agent1) {
  std::vector<PlannedRank> ranks;
  for (int i = 0; i < 4; ++i) {
    PlannedRank r;
    r.spec.rank = i;
    r.spec.world = 4;
    r.agent.name = i % 2 == 0 ? agent0 : agent1;
    ranks.push_back(r);
  }
  return ranks;
}

std::vector<int> ranksOf(const std::vector<agent::RankSpec>& specs) {
  std::vector<int> out;
  for (const auto& s : specs) out.push_back(s.rank);
  return out;
}

TEST(WorkloadGroup, EachAgentStartsItsOwnRanksAndTheGroupStopsThemAll) {
  testing::FakeAgent vm0;
  testing::FakeAgent vm1;
  fakes::MapAgentDirectory agents;
  agents.add("http://vm0", vm0);
  agents.add("http://vm1", vm1);
  ExitListener listener;
  auto group =
      startWorkloadGroup(agents, alternatingRanks("http://vm0", "http://vm1"), 0, &listener, 100);
  ASSERT_TRUE(group.isOk()) << group.status().toString();
  EXPECT_EQ(ranksOf(vm0.startedRanks()), (std::vector<int>{0, 2}));
  EXPECT_EQ(ranksOf(vm1.startedRanks()), (std::vector<int>{1, 3}));
  EXPECT_EQ((*group)->runningRanks(), 4);
  (*group)->stop(100);
  EXPECT_EQ((*group)->runningRanks(), 0);
  EXPECT_EQ(listener.exited(), (std::set<int>{0, 1, 2, 3}));
}

TEST(WorkloadGroup, AnAgentThatCannotBeHadStopsTheRanksAlreadyStarted) {
  testing::FakeAgent vm0;
  fakes::MapAgentDirectory agents;
  agents.add("http://vm0", vm0);
  ExitListener listener;
  // Groups start in agent-name order: vm0's ranks are running when vm9 turns out to be unknown.
  auto group =
      startWorkloadGroup(agents, alternatingRanks("http://vm0", "http://vm9"), 0, &listener, 100);
  ASSERT_FALSE(group.isOk());
  EXPECT_EQ(group.status().code(), core::StatusCode::kNotFound);
  EXPECT_THAT(group.status().message(), HasSubstr("http://vm9"));
  EXPECT_EQ(ranksOf(vm0.startedRanks()), (std::vector<int>{0, 2}));
  EXPECT_EQ(listener.exited(), (std::set<int>{0, 2}));
}

}  // namespace
}  // namespace fabric_chaos::scenarios
