#include "injectors/registry.h"

#include <gtest/gtest.h>

#include "injectors/loss/packet_loss.h"
#include "tests/fakes/fake_links.h"
#include "tests/fakes/fake_nftables.h"
#include "tests/fakes/fake_qdiscs.h"
#include "tests/fakes/fake_verbs_shim_channel.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

class RegistryTest : public ::testing::Test {
 protected:
  std::unique_ptr<Registry> make() { return makeRegistry({&links_, &nft_, &qdiscs_}); }
  KindInfo infoOf(const Registry& registry, const std::string& kind) {
    for (const KindInfo& info : registry.capabilities()) {
      if (info.kind == kind) return info;
    }
    ADD_FAILURE() << "no capability " << kind;
    return {};
  }

  fakes::FakeLinks links_;
  fakes::FakeNftables nft_;
  fakes::FakeQdiscs qdiscs_;
};

TEST_F(RegistryTest, ListsEveryKindSorted) {
  auto registry = make();
  const std::vector<std::string> kinds{"hot_spot",    "incast",     "link_flap", "netem",
                                       "packet_loss", "pfc_config", "pfc_storm", "pfc_watchdog"};
  EXPECT_EQ(registry->kinds(), kinds);
  for (const std::string& kind : kinds) ASSERT_NE(registry->find(kind), nullptr) << kind;
  EXPECT_EQ(registry->find("sm_failover"), nullptr);
  auto capabilities = registry->capabilities();
  ASSERT_EQ(capabilities.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i) EXPECT_EQ(capabilities[i].kind, kinds[i]);
  EXPECT_FALSE(capabilities[0].available);
  EXPECT_EQ(capabilities[0].reason, "no emitter or forwarding support in this agent");
  // Without emitters (this registry has none) the long-running kinds say why they cannot run.
  for (size_t i : {1, 6}) {
    EXPECT_FALSE(capabilities[i].available) << capabilities[i].kind;
    EXPECT_EQ(capabilities[i].reason, "no emitter support in this agent");
  }
  // Nor has it a DCB or lab switch adapter.
  EXPECT_EQ(capabilities[5].reason, "no DCB or lab switch adapter in this agent");
  EXPECT_EQ(capabilities[7].reason, "no lab switch adapter in this agent");
  for (const KindInfo& info : capabilities) EXPECT_FALSE(info.description.empty()) << info.kind;
}

TEST_F(RegistryTest, LinkFlapIsAlwaysAvailableThroughNetlink) {
  qdiscs_.setProbeResult("netem", core::Status(StatusCode::kNotSupported, "x"));
  nft_.setProbeResult(core::Status(StatusCode::kNotSupported, "y"));
  KindInfo info = infoOf(*make(), "link_flap");
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "netlink");
  EXPECT_EQ(info.reason, "");
}

TEST_F(RegistryTest, PrefersNetemWhenTheKernelHasIt) {
  auto registry = make();
  KindInfo info = infoOf(*registry, "packet_loss");
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "netem");
  EXPECT_EQ(info.reason, "");
  EXPECT_EQ(qdiscs_.probedKinds(), (std::vector<std::string>{"netem"}));
  // nftables is probed as well: a fault can ask for it with params.backend.
  EXPECT_EQ(nft_.probes().size(), 1u);
}

TEST_F(RegistryTest, FallsBackToNftablesWithoutNetem) {
  qdiscs_.setProbeResult(
      "netem", core::Status(StatusCode::kNotSupported, "sch_netem is not in this kernel", 12));
  auto registry = make();
  KindInfo info = infoOf(*registry, "packet_loss");
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "nftables");
  EXPECT_EQ(info.reason, "sch_netem is not in this kernel; using nftables numgen random drop");
  // The probe tries what apply will use: a netdev table, both hooks, a numgen rule.
  ASSERT_EQ(nft_.probes().size(), 1u);
  const std::string probe = nft_.probes()[0];
  EXPECT_NE(probe.find("add table netdev"), std::string::npos);
  EXPECT_NE(probe.find("hook ingress"), std::string::npos);
  EXPECT_NE(probe.find("hook egress"), std::string::npos);
  EXPECT_NE(probe.find("numgen random"), std::string::npos);

  // The chosen backend is the one that acts.
  Injector* loss = registry->find("packet_loss");
  Fault fault{"packet_loss", InterfaceTarget{"h1", "p1"}, json{{"percent", 20}}};
  ASSERT_TRUE(loss->apply(fault).isOk());
  EXPECT_TRUE(nft_.hasTable("h1", "netdev", "fc_loss_p1"));
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  EXPECT_EQ(loss->validate(json{{"percent", 5}, {"correlation", 10}}).message(),
            "correlation: needs the netem backend; this kernel has no sch_netem");
}

TEST_F(RegistryTest, NetemProbeErrorOtherThanMissingIsExplained) {
  qdiscs_.setProbeResult("netem",
                         core::Status(StatusCode::kPermissionDenied, "Operation not permitted"));
  KindInfo info = infoOf(*make(), "packet_loss");
  EXPECT_EQ(info.backend, "nftables");
  EXPECT_EQ(info.reason,
            "netem probe failed (Operation not permitted); using nftables numgen random drop");
}

TEST_F(RegistryTest, UnavailableWhenNeitherBackendWorks) {
  qdiscs_.setProbeResult("netem", core::Status(StatusCode::kNotSupported, "no netem"));
  nft_.setProbeResult(core::Status(StatusCode::kNotSupported,
                                   "nft: Could not process rule: Operation not supported"));
  auto registry = make();
  KindInfo info = infoOf(*registry, "packet_loss");
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.backend, "none");
  EXPECT_EQ(info.reason,
            "sch_netem is not in this kernel; nftables cannot drop packets either (nft: Could "
            "not process rule: Operation not supported)");
  core::Status applied =
      registry->find("packet_loss")
          ->apply({"packet_loss", InterfaceTarget{"h1", "p1"}, json{{"percent", 5}}});
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
}

TEST_F(RegistryTest, MissingAdaptersDoNotCrash) {
  auto registry = makeRegistry({});
  EXPECT_FALSE(infoOf(*registry, "link_flap").available);
  KindInfo loss = infoOf(*registry, "packet_loss");
  EXPECT_FALSE(loss.available);
  EXPECT_NE(loss.reason.find("no nftables adapter"), std::string::npos);
}

// The five verbs kinds come with a verbs shim channel, and share one lease keeper: a program
// armed by one kind is known to the others.
TEST_F(RegistryTest, TheVerbsKindsComeWithAVerbsShimChannel) {
  EXPECT_EQ(make()->find("verbs_cqe_error"), nullptr);
  fakes::FakeVerbsShimChannel shims("/run/fabric-chaos-agent/verbs");
  shims.addProcess({4100, "python", 0, {"mlx5_0"}});
  SysAdapters adapters{&links_, &nft_, &qdiscs_};
  adapters.verbs_shims = &shims;
  auto registry = makeRegistry(adapters);
  for (const std::string kind : {"verbs_completion_delay", "verbs_cqe_error", "verbs_post_fail",
                                 "verbs_qp_error", "verbs_reg_mr_fail"}) {
    const KindInfo info = infoOf(*registry, kind);
    EXPECT_TRUE(info.available) << kind;
    EXPECT_EQ(info.backend,
              "verbs shim (LD_PRELOAD, control socket /run/fabric-chaos-agent/verbs)");
  }
  const Fault cqe{"verbs_cqe_error", ProcessTarget{std::nullopt, 0}, json::object()};
  ASSERT_TRUE(registry->find("verbs_cqe_error")->apply(cqe).isOk());
  const Fault delay{"verbs_completion_delay", ProcessTarget{4100, std::nullopt}, json::object()};
  EXPECT_EQ(registry->find("verbs_completion_delay")->apply(delay).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(registry->find("verbs_cqe_error")->revert(cqe, json{{"pids", {4100}}}).isOk());
}

TEST(RegistryAdd, ReplacesAKindAndKeepsOrder) {
  Registry registry;
  fakes::FakeNftables nft;
  registry.add(std::make_unique<PacketLoss>(LossBackend::kNone, nullptr, nullptr, "first"));
  registry.add(std::make_unique<PacketLoss>(LossBackend::kNftables, nullptr, &nft, "second"));
  ASSERT_EQ(registry.kinds().size(), 1u);
  EXPECT_EQ(registry.capabilities()[0].reason, "second");
}

}  // namespace
}  // namespace fabric_chaos::injectors
