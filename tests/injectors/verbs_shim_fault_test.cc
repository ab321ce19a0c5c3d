// The verbs shim kinds' injector (injectors/verbs/verbs_shim_fault.h) against a fake channel:
// which programs a process target matches, the error that lists what is there when none does,
// the arm request (fault, lease, seed), all-or-nothing arming, one fault per program, a revert
// that is idempotent and tolerates programs that exited, and observe.

#include "injectors/verbs/verbs_shim_fault.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>

#include "tests/fakes/fake_verbs_shim_channel.h"

namespace fabric_chaos::injectors {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

ProcessTarget byPid(int64_t pid) { return ProcessTarget{pid, std::nullopt}; }
ProcessTarget byRank(int rank) { return ProcessTarget{std::nullopt, rank}; }
ProcessTarget byName(const std::string& name) {
  return ProcessTarget{std::nullopt, std::nullopt, name};
}

class VerbsShimFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    channel_.addProcess({100, "python", 0, {"mlx5_0"}});
    channel_.addProcess({101, "python", 1, {"mlx5_1"}});
    channel_.addProcess({200, "ib_write_bw", std::nullopt, {"mlx5_0"}});
  }
  VerbsShimFault injector(VerbsFaultKind kind) { return VerbsShimFault(kind, &channel_, leases_); }
  static Fault fault(const std::string& kind, ProcessTarget target, json params = json::object()) {
    return Fault{kind, target, std::move(params)};
  }

  fakes::FakeVerbsShimChannel channel_{"/run/fabric-chaos-agent/verbs"};
  // Renewals are the keeper's own test's business: this one never ticks.
  std::shared_ptr<ShimLeaseKeeper> leases_ =
      std::make_shared<ShimLeaseKeeper>(channel_, std::chrono::hours(1));
};

TEST_F(VerbsShimFaultTest, InfoNamesTheSocketDirectory) {
  const KindInfo info = injector(VerbsFaultKind::kCqeError).info();
  EXPECT_EQ(info.kind, "verbs_cqe_error");
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "verbs shim (LD_PRELOAD, control socket /run/fabric-chaos-agent/verbs)");
  const VerbsShimFault without(VerbsFaultKind::kQpError, nullptr, nullptr);
  EXPECT_FALSE(without.info().available);
  EXPECT_EQ(without.info().reason, "no verbs shim channel in this agent");
  auto refused = VerbsShimFault(VerbsFaultKind::kQpError, nullptr, nullptr)
                     .capture(fault("verbs_qp_error", byPid(100)));
  EXPECT_EQ(refused.status().code(), StatusCode::kNotSupported);
}

TEST_F(VerbsShimFaultTest, ValidateChecksTheSchemaThenTheRulesBetweenParameters) {
  auto post_fail = injector(VerbsFaultKind::kPostFail);
  EXPECT_TRUE(post_fail.validate({{"op", "recv"}, {"errno", "EAGAIN"}}).isOk());
  EXPECT_EQ(post_fail.validate({{"delay_ms", 5}}).message().substr(0, 29),
            "delay_ms: unknown parameter (");
  const Status cross = post_fail.validate({{"op", "recv"}, {"opcode", "send"}});
  EXPECT_EQ(cross.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(cross.message().substr(0, 7), "opcode:");
  EXPECT_TRUE(channel_.requests().empty()) << "validation touches nothing";
}

TEST_F(VerbsShimFaultTest, CaptureJournalsThePidsTheTargetMatches) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const std::vector<std::pair<ProcessTarget, json>> cases = {
      {byPid(101), json::array({101})},
      {byRank(0), json::array({100})},
      {byName("python"), json::array({100, 101})},
      {ProcessTarget{}, json::array({100, 101, 200})},
  };
  for (const auto& [target, pids] : cases) {
    SCOPED_TRACE(describe(Target(target)));
    auto prior = cqe.capture(fault("verbs_cqe_error", target));
    ASSERT_TRUE(prior.isOk()) << prior.status().toString();
    EXPECT_EQ(*prior, (json{{"pids", pids}}));
  }
  EXPECT_TRUE(channel_.requests().empty()) << "capture arms nothing";
}

TEST_F(VerbsShimFaultTest, NoMatchIsAnErrorListingTheProgramsThereAre) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  auto none = cqe.capture(fault("verbs_cqe_error", byRank(5)));
  ASSERT_FALSE(none.isOk());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.status().message(),
            "no shim-loaded process matches workload rank 5 (3 shim-loaded processes here: "
            "100 python rank 0, 101 python rank 1, 200 ib_write_bw)");
  EXPECT_EQ(cqe.apply(fault("verbs_cqe_error", byName("all_reduce_perf"))).code(),
            StatusCode::kFailedPrecondition);

  fakes::FakeVerbsShimChannel empty("/run/a/verbs");
  VerbsShimFault lonely(VerbsFaultKind::kCqeError, &empty, leases_);
  EXPECT_EQ(lonely.capture(fault("verbs_cqe_error", ProcessTarget{})).status().message(),
            "no shim-loaded process runs here (none here: start the program with "
            "LD_PRELOAD=libfabric-chaos-verbs.so and FABRIC_CHAOS_VERBS_DIR=/run/a/verbs)");
  EXPECT_TRUE(channel_.requests().empty());

  // The channel's own failure is passed on as it is.
  channel_.failList(Status(StatusCode::kUnavailable, "cannot read the verbs shims' directory"));
  EXPECT_EQ(cqe.capture(fault("verbs_cqe_error", byPid(100))).status().code(),
            StatusCode::kUnavailable);
}

TEST_F(VerbsShimFaultTest, OnlyProcessTargetsAreTaken) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const Fault on_interface{"verbs_cqe_error", InterfaceTarget{"", "eth0"}, json::object()};
  auto refused = cqe.capture(on_interface);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "verbs_cqe_error acts on a process, not on target type interface");
  EXPECT_EQ(cqe.apply(on_interface).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cqe.revert(on_interface, json::object()).code(), StatusCode::kInvalidArgument);
}

TEST_F(VerbsShimFaultTest, ApplyArmsEveryMatchWithTheFaultALeaseAndTheFaultsSeed) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const Fault f =
      fault("verbs_cqe_error", byName("python"), {{"status", "wr_flush_err"}, {"count", 2}});
  ASSERT_TRUE(cqe.apply(f).isOk());
  for (pid_t pid : {100, 101}) {
    SCOPED_TRACE(pid);
    auto request = channel_.armRequest(pid);
    ASSERT_TRUE(request.has_value());
    ASSERT_EQ(request->faults.size(), 1u);
    EXPECT_EQ(verbs_shim::toJson(request->faults[0]),
              verbs_shim::toJson(*shimFaultOf("verbs_cqe_error", f.params)));
    EXPECT_EQ(request->faults[0].status, 5);
    EXPECT_EQ(request->faults[0].trigger.count, 2);
    EXPECT_EQ(request->lease_ms, VerbsShimFault::kLeaseMs);
    EXPECT_EQ(request->seed, shimSeedOf(faultKey(f)));
  }
  EXPECT_FALSE(channel_.armRequest(200).has_value()) << "not named python";
  EXPECT_EQ(leases_->held(faultKey(f)), (std::vector<pid_t>{100, 101}));
  // Applying again leaves one fault: the shims' arms replace what they held.
  ASSERT_TRUE(cqe.apply(f).isOk());
  EXPECT_EQ(channel_.count("arm 100"), 2);
  EXPECT_EQ(leases_->held(faultKey(f)), (std::vector<pid_t>{100, 101}));

  // verbs_post_fail's op picks the call.
  const Fault recv = fault("verbs_post_fail", byPid(200), {{"op", "recv"}, {"errno", "EINVAL"}});
  ASSERT_TRUE(injector(VerbsFaultKind::kPostFail).apply(recv).isOk());
  ASSERT_EQ(channel_.armedFaults(200).size(), 1u);
  EXPECT_EQ(channel_.armedFaults(200)[0].kind, verbs_shim::ShimFaultKind::kPostRecvFail);
  EXPECT_EQ(channel_.armedFaults(200)[0].error, EINVAL);
}

TEST_F(VerbsShimFaultTest, ApplyIsAllOrNothing) {
  auto delay = injector(VerbsFaultKind::kCompletionDelay);
  channel_.refuseArm(101,
                     Status(StatusCode::kFailedPrecondition,
                            "the verbs shim of process 101 refused: arm[0].kind: must be ..."));
  const Fault f = fault("verbs_completion_delay", ProcessTarget{}, {{"delay_ms", 50}});
  const Status status = delay.apply(f);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "verbs_completion_delay: the verbs shim of process 101 refused: arm[0].kind: must be "
            "...; the 1 process(es) already armed were disarmed");
  EXPECT_EQ(channel_.requests(), (std::vector<std::string>{"arm 100", "arm 101", "disarm 100"}));
  EXPECT_TRUE(channel_.armedFaults(100).empty());
  EXPECT_TRUE(leases_->held(faultKey(f)).empty()) << "nothing to renew";

  // A program that exited between capture and apply fails the apply the same way.
  channel_.exit(101);
  channel_.addProcess({102, "python", 1, {}});
  channel_.failOn(static_cast<int>(channel_.requests().size()) + 2,
                  Status(StatusCode::kTimeout, "the verbs shim of process 102 did not answer"));
  EXPECT_EQ(delay.apply(f).code(), StatusCode::kTimeout);
  EXPECT_TRUE(channel_.armedFaults(100).empty());
}

TEST_F(VerbsShimFaultTest, AProgramIsArmedByOneFaultAtATime) {
  const Fault cqe = fault("verbs_cqe_error", byPid(100));
  ASSERT_TRUE(injector(VerbsFaultKind::kCqeError).apply(cqe).isOk());
  const Fault qp = fault("verbs_qp_error", byRank(0));
  const Status refused = injector(VerbsFaultKind::kQpError).apply(qp);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("process 100 python rank 0 is armed by another verbs fault (" +
                                   faultKey(cqe) + ")"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(channel_.count("arm 100"), 1) << "refused before anything was armed";
  ASSERT_EQ(channel_.armedFaults(100).size(), 1u);
  EXPECT_EQ(channel_.armedFaults(100)[0].kind, verbs_shim::ShimFaultKind::kCqeError);
  // Once the first is reverted, the program is free.
  ASSERT_TRUE(injector(VerbsFaultKind::kCqeError).revert(cqe, json{{"pids", {100}}}).isOk());
  EXPECT_TRUE(injector(VerbsFaultKind::kQpError).apply(qp).isOk());
}

TEST_F(VerbsShimFaultTest, RevertDisarmsIsIdempotentAndTakesExitedProgramsAsDone) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const Fault f = fault("verbs_cqe_error", ProcessTarget{});
  auto prior = cqe.capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(cqe.apply(f).isOk());
  channel_.exit(200);  // took its faults with it
  ASSERT_TRUE(cqe.revert(f, *prior).isOk());
  EXPECT_TRUE(channel_.armedFaults(100).empty());
  EXPECT_TRUE(channel_.armedFaults(101).empty());
  EXPECT_TRUE(leases_->held(faultKey(f)).empty()) << "no more renewals";
  EXPECT_EQ(channel_.count("disarm 200"), 1);
  // Again (a retry, start-up recovery): still fine.
  EXPECT_TRUE(cqe.revert(f, *prior).isOk());
  // A prior without pids (journalled by a crashed capture) reverts nothing, successfully.
  EXPECT_TRUE(cqe.revert(f, json::object()).isOk());
}

TEST_F(VerbsShimFaultTest, ARevertThatCannotReachAProgramSaysSoAfterDisarmingTheOthers) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const Fault f = fault("verbs_cqe_error", byName("python"));
  auto prior = cqe.capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(cqe.apply(f).isOk());
  channel_.failOn(static_cast<int>(channel_.requests().size()) + 1,
                  Status(StatusCode::kTimeout, "the verbs shim of process 100 did not answer"));
  const Status status = cqe.revert(f, *prior);
  EXPECT_EQ(status.code(), StatusCode::kTimeout);
  EXPECT_TRUE(channel_.armedFaults(101).empty()) << "the other was disarmed all the same";
  // The engine retries: now it answers.
  EXPECT_TRUE(cqe.revert(f, *prior).isOk());
  EXPECT_TRUE(channel_.armedFaults(100).empty());
}

TEST_F(VerbsShimFaultTest, RevertAlsoDisarmsAProgramThatStartedBetweenCaptureAndApply) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const Fault f = fault("verbs_cqe_error", byName("ib_write_bw"));
  auto prior = cqe.capture(f);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"pids", {200}}}));
  channel_.addProcess({201, "ib_write_bw", std::nullopt, {}});
  ASSERT_TRUE(cqe.apply(f).isOk());
  EXPECT_EQ(channel_.armedFaults(201).size(), 1u);
  ASSERT_TRUE(cqe.revert(f, *prior).isOk());
  EXPECT_TRUE(channel_.armedFaults(201).empty());
  EXPECT_TRUE(channel_.armedFaults(200).empty());
}

TEST_F(VerbsShimFaultTest, ObserveReportsTheProgramsThisFaultHolds) {
  auto cqe = injector(VerbsFaultKind::kCqeError);
  const Fault f = fault("verbs_cqe_error", byRank(0));
  auto prior = cqe.capture(f);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(cqe.apply(f).isOk());
  auto seen = cqe.observe(f);
  ASSERT_TRUE(seen.isOk()) << seen.status().toString();
  EXPECT_EQ(*seen, (json{{"processes",
                          {{{"pid", 100},
                            {"comm", "python"},
                            {"rank", 0},
                            {"armed", {{{"kind", "cqe_error"}, {"seen", 0}, {"fired", 0}}}}}}}}));
  const Fault unranked = fault("verbs_qp_error", byPid(200));
  ASSERT_TRUE(injector(VerbsFaultKind::kQpError).apply(unranked).isOk());
  auto other = injector(VerbsFaultKind::kQpError).observe(unranked);
  ASSERT_TRUE(other.isOk());
  EXPECT_TRUE((*other)["processes"][0]["rank"].is_null());
  ASSERT_TRUE(cqe.revert(f, *prior).isOk());
  EXPECT_EQ(*cqe.observe(f), (json{{"processes", json::array()}}));
}

TEST(ShimSeed, IsTheFaultsOwnAndFitsTheProtocol) {
  const std::string a = faultKey(Fault{"verbs_cqe_error", ProcessTarget{}, json::object()});
  const std::string b =
      faultKey(Fault{"verbs_cqe_error", ProcessTarget{std::nullopt, 3}, json::object()});
  EXPECT_EQ(shimSeedOf(a), shimSeedOf(a));
  EXPECT_NE(shimSeedOf(a), shimSeedOf(b));
  EXPECT_LT(shimSeedOf(a), uint64_t{1} << 63) << "the control protocol reads a non-negative int64";
  // FNV-1a of the empty key, halved: stable across builds and hosts.
  EXPECT_EQ(shimSeedOf(""), 0xcbf29ce484222325ULL >> 1);
}

TEST(TargetMatches, ByPidRankNameOrAll) {
  const sys::ShimProcess ranked{100, "python", 2, {}};
  const sys::ShimProcess unranked{200, "ib_write_bw", std::nullopt, {}};
  EXPECT_TRUE(targetMatches(byPid(100), ranked));
  EXPECT_FALSE(targetMatches(byPid(100), unranked));
  EXPECT_TRUE(targetMatches(byRank(2), ranked));
  EXPECT_FALSE(targetMatches(byRank(2), unranked)) << "no rank is no match";
  EXPECT_TRUE(targetMatches(byName("ib_write_bw"), unranked));
  EXPECT_FALSE(targetMatches(byName("ib_write"), unranked)) << "whole names only";
  EXPECT_TRUE(targetMatches(ProcessTarget{}, ranked));
  EXPECT_TRUE(targetMatches(ProcessTarget{}, unranked));
}

}  // namespace
}  // namespace fabric_chaos::injectors
