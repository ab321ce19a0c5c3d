// The netem injector against FakeQdiscs: capture/apply/change/revert/observe, restoring the
// user's prior root qdisc, refusing roots it could not give back, and failures on the Nth
// adapter call (a half-applied change or an interrupted revert still reverts fully).
#include <gtest/gtest.h>

#include "injectors/netem/netem.h"
#include "injectors/netem/netem_spec.h"
#include "injectors/registry.h"
#include "injectors/sys/qdisc.h"
#include "tests/fakes/fake_links.h"
#include "tests/fakes/fake_nftables.h"
#include "tests/fakes/fake_qdiscs.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using Log = std::vector<std::string>;

constexpr uint16_t kOptions = 2;  // TCA_OPTIONS

Fault netemFault(json params, const std::string& ifname = "veth-h1") {
  return Fault{"netem", InterfaceTarget{"h1", ifname}, std::move(params)};
}

// What `tc qdisc add dev X root handle 1: tbf rate 100mbit burst 32kb latency 50ms` leaves:
// the dumped option bytes are opaque to the injector.
sys::SavedQdisc userTbf() {
  return sys::SavedQdisc{"tbf", 0x10000U, {{kOptions, {0x24, 0x00, 0x01, 0x00, 0xaa, 0xbb}}}, ""};
}

class NetemInjectorTest : public ::testing::Test {
 protected:
  std::optional<sys::SavedQdisc> rootNow() {
    auto saved = qdiscs_.saveRoot("h1", "veth-h1");
    EXPECT_TRUE(saved.isOk());
    return saved.isOk() ? *saved : std::nullopt;
  }

  fakes::FakeQdiscs qdiscs_;
  Netem netem_{&qdiscs_, true, ""};
};

TEST_F(NetemInjectorTest, Info) {
  KindInfo info = netem_.info();
  EXPECT_EQ(info.kind, "netem");
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "netem");
  EXPECT_EQ(info.reason, "");
  EXPECT_NE(info.description.find("netem qdisc"), std::string::npos);

  Netem missing(&qdiscs_, false, "sch_netem is not in this kernel");
  EXPECT_FALSE(missing.info().available);
  EXPECT_EQ(missing.info().reason, "sch_netem is not in this kernel");
  Netem no_adapter(nullptr, true, "");
  EXPECT_FALSE(no_adapter.info().available);
  EXPECT_EQ(no_adapter.info().reason, "no qdisc adapter");
}

TEST_F(NetemInjectorTest, ValidateIsTheSpecParser) {
  EXPECT_TRUE(netem_.validate({{"delay_ms", 50}}).isOk());
  core::Status bad = netem_.validate({{"delay_ms", 50}, {"reorder_gap", 2}});
  EXPECT_EQ(bad.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(bad.message(), "reorder_gap: needs reorder_percent > 0");
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
}

TEST_F(NetemInjectorTest, ApplyChangeRevertOnTheKernelDefault) {
  Fault fault = netemFault({{"delay_ms", 50}, {"loss_percent", 10}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"default", true}, {"kind", ""}}));

  ASSERT_TRUE(netem_.apply(fault).isOk());
  ASSERT_TRUE(netem_.apply(fault).isOk()) << "applying twice leaves one netem";
  EXPECT_EQ(qdiscs_.log(), (Log{"netem create 8001:0", "netem change 8001:0"}));
  EXPECT_EQ(qdiscs_.netem("h1", "veth-h1")->delay_us, 50000);

  // A second apply with other params changes the same qdisc in place.
  Fault changed = netemFault({{"delay_ms", 20}, {"duplicate_percent", 5}});
  ASSERT_TRUE(netem_.apply(changed).isOk());
  EXPECT_EQ(qdiscs_.log().back(), "netem change 8001:0");
  auto spec = qdiscs_.netem("h1", "veth-h1");
  EXPECT_EQ(spec->delay_us, 20000);
  EXPECT_DOUBLE_EQ(spec->loss_percent, 0);
  EXPECT_DOUBLE_EQ(spec->duplicate_percent, 5);

  sys::QdiscInfo counters;
  counters.packets = 900;
  counters.bytes = 90000;
  counters.drops = 100;
  counters.overlimits = 3;
  counters.requeues = 2;
  counters.qlen = 7;
  counters.backlog = 700;
  qdiscs_.setCounters("h1", "veth-h1", counters);
  auto observed = netem_.observe(changed);
  ASSERT_TRUE(observed.isOk()) << observed.status().toString();
  EXPECT_EQ(*observed,
            (json{{"backend", "netem"},
                  {"active", true},
                  {"kind", "netem"},
                  {"handle", "8001:0"},
                  {"packets", 900},
                  {"bytes", 90000},
                  {"drops", 100},
                  {"overlimits", 3},
                  {"requeues", 2},
                  {"qlen", 7},
                  {"backlog", 700},
                  {"options",
                   {{"delay_ms", 20.0}, {"duplicate_percent", 5.0}, {"limit_packets", 1000}}}}));

  const int before = qdiscs_.mutatingCalls();
  ASSERT_TRUE(netem_.revert(changed, *prior).isOk());
  EXPECT_EQ(qdiscs_.log().back(), "delete");
  EXPECT_FALSE(rootNow().has_value());
  ASSERT_TRUE(netem_.revert(changed, *prior).isOk());
  EXPECT_EQ(qdiscs_.mutatingCalls(), before + 1) << "a second revert has nothing to do";
  auto after = netem_.observe(changed);
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ((*after)["active"], false);
  EXPECT_FALSE(after->contains("options"));
}

TEST_F(NetemInjectorTest, RestoresTheUsersRootQdiscExactly) {
  qdiscs_.installRoot("h1", "veth-h1", userTbf());
  Fault fault = netemFault({{"rate_kbit", 8000}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"default", false},
                          {"kind", "tbf"},
                          {"handle", "1:0"},
                          {"attributes", {{{"type", 2}, {"hex", "24000100aabb"}}}}}));

  ASSERT_TRUE(netem_.apply(fault).isOk());
  EXPECT_EQ(rootNow()->kind, "netem");
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());
  EXPECT_EQ(qdiscs_.log(), (Log{"netem create 8001:0", "delete", "restore tbf 1:0"}));
  EXPECT_EQ(*rootNow(), userTbf());

  // Reverting again finds the prior in place and leaves it alone.
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());
  EXPECT_EQ(qdiscs_.log().size(), 3u);
}

TEST_F(NetemInjectorTest, RestoresAUsersOwnNetemAfterChangingItInPlace) {
  sys::NetemSpec theirs;
  theirs.delay_us = 5000;
  sys::SavedQdisc user{
      "netem", 0x50000U, {{kOptions, sys::encodeNetemOptions(sys::netemAttributes(theirs))}}, ""};
  qdiscs_.installRoot("h1", "veth-h1", user);
  Fault fault = netemFault({{"loss_percent", 20}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ((*prior)["default"], false);
  // Nothing applied yet: revert sees the prior in place.
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());
  EXPECT_TRUE(qdiscs_.log().empty());

  ASSERT_TRUE(netem_.apply(fault).isOk());
  EXPECT_EQ(qdiscs_.log(), (Log{"netem change 5:0"}));
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());
  EXPECT_EQ(qdiscs_.log(), (Log{"netem change 5:0", "delete", "restore netem 5:0"}));
  EXPECT_EQ(*rootNow(), user);
}

TEST_F(NetemInjectorTest, RefusesARootItCouldNotGiveBack) {
  sys::SavedQdisc htb{"htb", 0x10000U, {{kOptions, {1, 2, 3}}}, "it has classes"};
  qdiscs_.installRoot("h1", "veth-h1", htb);
  Fault fault = netemFault({{"delay_ms", 10}});
  auto prior = netem_.capture(fault);
  EXPECT_EQ(prior.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(prior.status().message(),
            "root qdisc htb 1:0 on veth-h1 could not be given back after netem: it has classes; "
            "remove it or choose another interface");
  core::Status applied = netem_.apply(fault);
  EXPECT_EQ(applied.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  EXPECT_EQ(rootNow()->kind, "htb");
}

TEST_F(NetemInjectorTest, HalfAppliedChangeStillRevertsFully) {
  qdiscs_.installRoot("h1", "veth-h1", userTbf());
  Fault fault = netemFault({{"delay_ms", 50}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_.apply(fault).isOk());  // call 1
  qdiscs_.failOnCall(2, core::Status(StatusCode::kUnavailable, "netlink busy", 16));
  core::Status change = netem_.apply(netemFault({{"delay_ms", 80}, {"loss_percent", 5}}));
  EXPECT_EQ(change.code(), StatusCode::kUnavailable);
  EXPECT_EQ(change.message(), "netem apply on veth-h1: netlink busy");
  EXPECT_EQ(qdiscs_.netem("h1", "veth-h1")->delay_us, 50000) << "the failed change left the old";
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());  // calls 3, 4
  EXPECT_EQ(*rootNow(), userTbf());
}

TEST_F(NetemInjectorTest, InterruptedRevertResumes) {
  qdiscs_.installRoot("h1", "veth-h1", userTbf());
  Fault fault = netemFault({{"corrupt_percent", 1}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_.apply(fault).isOk());  // call 1

  // The delete fails: nothing changed, the next revert does it all.
  qdiscs_.failOnCall(2, core::Status(StatusCode::kPermissionDenied, "Operation not permitted", 1));
  core::Status first = netem_.revert(fault, *prior);
  EXPECT_EQ(first.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(rootNow()->kind, "netem");

  // The delete works but the re-creation fails: the kernel default is left behind ...
  qdiscs_.failOnCall(4, core::Status(StatusCode::kInternal, "ENOBUFS", 105));
  core::Status second = netem_.revert(fault, *prior);  // calls 3 (delete), 4 (restore)
  EXPECT_EQ(second.code(), StatusCode::kInternal);
  EXPECT_EQ(second.message(), "netem revert on veth-h1: ENOBUFS");
  EXPECT_FALSE(rootNow().has_value());

  // ... and the next revert only re-creates the prior.
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());  // call 5
  EXPECT_EQ(qdiscs_.log(), (Log{"netem create 8001:0", "delete", "restore tbf 1:0"}));
  EXPECT_EQ(*rootNow(), userTbf());
}

TEST_F(NetemInjectorTest, FailedFirstApplyLeavesNothingToRevert) {
  qdiscs_.failOnCall(1, core::Status(StatusCode::kNotSupported, "sch_netem is not in this kernel"));
  Fault fault = netemFault({{"delay_ms", 1}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(prior.isOk());
  core::Status applied = netem_.apply(fault);
  EXPECT_EQ(applied.message(), "netem apply on veth-h1: sch_netem is not in this kernel");
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());
  EXPECT_EQ(qdiscs_.mutatingCalls(), 1);
  EXPECT_TRUE(qdiscs_.log().empty());
}

TEST_F(NetemInjectorTest, MissingDevice) {
  Fault fault = netemFault({{"delay_ms", 1}}, "gone0");
  auto prior = netem_.capture(netemFault({{"delay_ms", 1}}, "gone0"));
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(netem_.apply(fault).isOk());
  qdiscs_.removeDevice("h1", "gone0");
  EXPECT_TRUE(netem_.revert(fault, *prior).isOk()) << "the device took its qdisc with it";
  EXPECT_TRUE(netem_
                  .revert(fault, json{{"default", false},
                                      {"kind", "tbf"},
                                      {"handle", "1:"},
                                      {"attributes", json::array()}})
                  .isOk());
  EXPECT_EQ(netem_.capture(fault).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(netem_.apply(fault).code(), StatusCode::kNotFound);
  EXPECT_EQ(netem_.observe(fault).status().code(), StatusCode::kNotFound);
}

TEST_F(NetemInjectorTest, LeavesAQdiscSomeoneElseAttachedMeanwhile) {
  Fault fault = netemFault({{"delay_ms", 1}});
  auto prior = netem_.capture(fault);
  ASSERT_TRUE(netem_.apply(fault).isOk());
  qdiscs_.installRoot("h1", "veth-h1", sys::SavedQdisc{"fq_codel", 0x20000U, {}, ""});
  ASSERT_TRUE(netem_.revert(fault, *prior).isOk());
  EXPECT_EQ(rootNow()->kind, "fq_codel");
  EXPECT_EQ(qdiscs_.log(), (Log{"netem create 8001:0"}));
}

TEST_F(NetemInjectorTest, MalformedPriorStillRemovesTheFault) {
  Fault fault = netemFault({{"delay_ms", 1}});
  ASSERT_TRUE(netem_.apply(fault).isOk());
  core::Status reverted = netem_.revert(fault, json{{"default", false}, {"kind", "tbf"}});
  EXPECT_EQ(reverted.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reverted.message().find("netem removed, but the prior root qdisc cannot be "
                                    "re-created: prior.handle"),
            std::string::npos)
      << reverted.message();
  EXPECT_FALSE(rootNow().has_value());
}

TEST_F(NetemInjectorTest, NoPriorMeansTheKernelDefault) {
  Fault fault = netemFault({{"delay_ms", 1}});
  for (const json& prior : {json(), json::object()}) {
    ASSERT_TRUE(netem_.apply(fault).isOk());
    ASSERT_TRUE(netem_.revert(fault, prior).isOk()) << prior.dump();
    EXPECT_FALSE(rootNow().has_value());
  }
}

TEST_F(NetemInjectorTest, UnavailableRefusesApplyButStillReverts) {
  Netem unavailable(&qdiscs_, false, "sch_netem is not in this kernel");
  Fault fault = netemFault({{"delay_ms", 1}});
  core::Status applied = unavailable.apply(fault);
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_EQ(applied.message(), "netem is unavailable: sch_netem is not in this kernel");
  EXPECT_EQ(unavailable.apply(netemFault({{"delay_ms", -1}})).code(), StatusCode::kUnprocessable)
      << "bad params are reported first";
  ASSERT_TRUE(netem_.apply(fault).isOk());  // left by an earlier process
  EXPECT_TRUE(unavailable.revert(fault, json{{"default", true}}).isOk());
  EXPECT_FALSE(rootNow().has_value());
}

TEST_F(NetemInjectorTest, TargetIsRequired) {
  Fault fault = netemFault({{"delay_ms", 1}}, "");
  EXPECT_EQ(netem_.capture(fault).status().message(), "target.ifname: required");
  EXPECT_EQ(netem_.apply(fault).message(), "target.ifname: required");
  EXPECT_EQ(netem_.revert(fault, json()).message(), "target.ifname: required");
  EXPECT_EQ(netem_.observe(fault).status().message(), "target.ifname: required");
}

// A target of another type never reaches the qdisc adapter, in any call.
TEST_F(NetemInjectorTest, RefusesTargetsThatAreNotInterfacesWithoutTouchingTheSystem) {
  // Each target type that is not an interface, and how the refusal names it.
  const std::vector<std::pair<Target, std::string>> others = {
      {RdmaPortTarget{"rxe0", 1, 0}, "an rdma_port"},
      {SubnetManagerTarget{"0x2c9", ""}, "a subnet_manager"},
      {ProcessTarget{1234, std::nullopt}, "a process"},
      {TrafficSetTarget{{{"h1", "veth-h1"}}, {{"h2", "eth0"}}}, "a traffic_set"},
  };
  for (const auto& [target, type] : others) {
    SCOPED_TRACE(type);
    const Fault other{"netem", target, json{{"delay_ms", 1}}};
    const std::string expected = "netem acts on an interface, not on " + type;
    EXPECT_EQ(netem_.capture(other).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(netem_.capture(other).status().message(), expected);
    EXPECT_EQ(netem_.apply(other).message(), expected);
    EXPECT_EQ(netem_.revert(other, json()).message(), expected);
    EXPECT_EQ(netem_.observe(other).status().message(), expected);
  }
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  EXPECT_TRUE(qdiscs_.log().empty());
  EXPECT_FALSE(rootNow().has_value());
}

TEST_F(NetemInjectorTest, ObserveDecodesGilbertElliott) {
  Fault fault = netemFault(
      {{"loss_model", {{"gilbert_elliott", {{"p", 5}, {"r", 50}, {"h", 0}, {"k", 100}}}}}});
  ASSERT_TRUE(netem_.apply(fault).isOk());
  auto observed = netem_.observe(fault);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["options"]["loss_model"],
            (json{{"gilbert_elliott", {{"p", 5.0}, {"r", 50.0}, {"h", 0.0}, {"k", 100.0}}}}));
}

// --- registry ---

class NetemRegistryTest : public ::testing::Test {
 protected:
  std::unique_ptr<Registry> make() { return makeRegistry({&links_, &nft_, &qdiscs_}); }
  fakes::FakeLinks links_;
  fakes::FakeNftables nft_;
  fakes::FakeQdiscs qdiscs_;
};

TEST_F(NetemRegistryTest, RegisteredAndAvailableWithSchNetem) {
  auto registry = make();
  Injector* netem = registry->find("netem");
  ASSERT_NE(netem, nullptr);
  EXPECT_TRUE(netem->info().available);
  EXPECT_EQ(netem->info().backend, "netem");
  EXPECT_EQ(qdiscs_.probedKinds(), (std::vector<std::string>{"netem"})) << "probed once";
  EXPECT_EQ(registry->find("packet_loss")->info().backend, "netem");
}

TEST_F(NetemRegistryTest, UnavailableWithoutSchNetem) {
  qdiscs_.setProbeResult("netem", core::Status(StatusCode::kNotSupported, "whatever", 2));
  auto registry = make();
  KindInfo info = registry->find("netem")->info();
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.reason, "sch_netem is not in this kernel");
  EXPECT_EQ(qdiscs_.probedKinds().size(), 1u);
  EXPECT_EQ(registry->find("packet_loss")->info().backend, "nftables");
}

TEST_F(NetemRegistryTest, ProbeFailureIsExplained) {
  qdiscs_.setProbeResult("netem",
                         core::Status(StatusCode::kPermissionDenied, "Operation not permitted", 1));
  KindInfo info = make()->find("netem")->info();
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.reason, "netem probe failed (Operation not permitted)");
}

}  // namespace
}  // namespace fabric_chaos::injectors
