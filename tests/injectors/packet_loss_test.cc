#include "injectors/loss/packet_loss.h"

#include <gtest/gtest.h>

#include "injectors/netem/netem_spec.h"
#include "injectors/registry.h"
#include "injectors/sys/qdisc.h"
#include "tests/fakes/fake_links.h"
#include "tests/fakes/fake_nftables.h"
#include "tests/fakes/fake_qdiscs.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

Fault lossFault(json params, const std::string& ifname = "veth-h1") {
  return Fault{"packet_loss", InterfaceTarget{"h1", ifname}, std::move(params)};
}

// --- pure translation ---

TEST(PacketLossTranslation, TableName) {
  EXPECT_EQ(nftLossTableName("eth0"), "fc_loss_eth0");
  EXPECT_EQ(nftLossTableName("veth-h1.100"), "fc_loss_veth_h1_100");
  EXPECT_EQ(nftLossTableName("p1@x"), "fc_loss_p1_x");
}

TEST(PacketLossTranslation, Threshold) {
  struct Case {
    double percent;
    int64_t threshold;
  };
  for (const Case& c : std::vector<Case>{{30, 300000},
                                         {100, 1000000},
                                         {0.5, 5000},
                                         {12.34567, 123457},
                                         {0.00001, 1},
                                         {0, 0},
                                         {150, 1000000}}) {
    EXPECT_EQ(nftLossThreshold(c.percent), c.threshold) << c.percent;
  }
}

TEST(PacketLossTranslation, NetemProbabilityScale) {
  EXPECT_EQ(sys::netemProbability(0), 0u);
  EXPECT_EQ(sys::netemProbability(100), 0xffffffffu);
  EXPECT_EQ(sys::netemProbability(50), 0x80000000u);
  EXPECT_EQ(sys::netemProbability(25), 0x40000000u);
  EXPECT_EQ(sys::netemProbability(-1), 0u);
  EXPECT_EQ(sys::netemProbability(250), 0xffffffffu);
}

TEST(PacketLossTranslation, Scripts) {
  auto scripts = nftLossScripts("veth-h1", 30, {"ingress", "egress"});
  ASSERT_EQ(scripts.size(), 5u);
  EXPECT_EQ(scripts[0], "add table netdev fc_loss_veth_h1");
  EXPECT_EQ(scripts[1],
            "add chain netdev fc_loss_veth_h1 loss_ingress { type filter hook ingress device "
            "\"veth-h1\" priority -500; policy accept; }");
  EXPECT_EQ(scripts[2],
            "add rule netdev fc_loss_veth_h1 loss_ingress counter\n"
            "add rule netdev fc_loss_veth_h1 loss_ingress numgen random mod 1000000 < 300000 "
            "counter drop");
  EXPECT_NE(scripts[3].find("hook egress device \"veth-h1\" priority -500"), std::string::npos);
  EXPECT_EQ(nftLossScripts("e", 1, {"egress"}).size(), 3u);
}

TEST(PacketLossTranslation, FullLossDropsWithoutNumgen) {
  // nft refuses "numgen random mod 1000000 < 1000000"; 100 % (and above) is a plain drop.
  for (double percent : {100.0, 150.0}) {
    auto scripts = nftLossScripts("p1", percent, {"ingress"});
    ASSERT_EQ(scripts.size(), 3u);
    EXPECT_EQ(scripts[2],
              "add rule netdev fc_loss_p1 loss_ingress counter\n"
              "add rule netdev fc_loss_p1 loss_ingress counter drop")
        << percent;
  }
  EXPECT_NE(nftLossScripts("p1", 99.9999, {"ingress"})[2].find("< 999999 counter drop"),
            std::string::npos);
}

TEST(PacketLossTranslation, CountersSumOverChains) {
  json listing = json::parse(R"({"nftables": [
    {"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
    {"table": {"family": "netdev", "name": "fc_loss_p1", "handle": 1}},
    {"chain": {"family": "netdev", "table": "fc_loss_p1", "name": "loss_ingress"}},
    {"rule": {"chain": "loss_ingress", "expr": [{"counter": {"packets": 100, "bytes": 9000}}]}},
    {"rule": {"chain": "loss_ingress", "expr": [
      {"match": {"op": "<", "left": {"numgen": {"mode": "random", "mod": 1000000}}, "right": 300000}},
      {"counter": {"packets": 31, "bytes": 2790}}, {"drop": null}]}},
    {"rule": {"chain": "loss_egress", "expr": [{"counter": {"packets": 50, "bytes": 1}}]}},
    {"rule": {"chain": "loss_egress", "expr": [
      {"match": {}}, {"counter": {"packets": 14, "bytes": 1}}, {"drop": null}]}}
  ]})");
  LossCounters counters = nftLossCounters(listing);
  EXPECT_EQ(counters.seen, 150u);
  EXPECT_EQ(counters.dropped, 45u);
  EXPECT_EQ(nftLossCounters(json::object()).seen, 0u);
  EXPECT_EQ(nftLossCounters(json{{"nftables", json::array({json{{"rule", 3}}})}}).dropped, 0u);
}

// --- validation ---

// A wrong shape is a 400, a well-typed value out of range or in conflict a 422 (docs/faults.md).
constexpr StatusCode kShape = StatusCode::kInvalidArgument;
constexpr StatusCode kValue = StatusCode::kUnprocessable;

struct ValidationCase {
  json params;
  std::string error;  // "" = valid
  StatusCode code = kShape;
};

void expectValidation(const PacketLoss& loss, const std::vector<ValidationCase>& cases) {
  for (const ValidationCase& c : cases) {
    core::Status status = loss.validate(c.params);
    if (c.error.empty()) {
      EXPECT_TRUE(status.isOk()) << c.params.dump() << " -> " << status.toString();
    } else {
      EXPECT_EQ(status.code(), c.code) << c.params.dump();
      EXPECT_EQ(status.message().rfind(c.error, 0), 0u)
          << c.params.dump() << " -> " << status.message();
    }
  }
}

TEST(PacketLossValidation, CommonToBothBackends) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  for (LossBackend backend : {LossBackend::kNftables, LossBackend::kNetem}) {
    SCOPED_TRACE(lossBackendName(backend));
    PacketLoss loss(backend, &qdiscs, &nft, "");
    // netem acts on egress only (see DirectionOnNetem); every case says egress so that the rest
    // is checked the same way on both.
    auto egress = [](json params) {
      if (params.is_object()) params["direction"] = "egress";
      return params;
    };
    expectValidation(
        loss,
        {
            {egress({{"percent", 30}}), ""},
            {egress({{"percent", 0.001}}), ""},
            {{{"percent", 100}, {"direction", "egress"}}, ""},
            {egress({{"percent", 5}, {"correlation", 0}}), ""},
            {egress(json::object()), "percent: required"},
            {egress({{"percent", 0}}), "percent: must be a number in (0, 100]", kValue},
            {egress({{"percent", -1}}), "percent: must be a number in (0, 100]", kValue},
            {egress({{"percent", 100.01}}), "percent: must be a number in (0, 100]", kValue},
            {egress({{"percent", "30"}}), "percent: must be a number in (0, 100]"},
            {{{"percent", 5}, {"direction", "out"}},
             "direction: must be one of both, ingress, egress",
             kValue},
            {{{"percent", 5}, {"direction", 1}}, "direction: must be one of both, ingress, egress"},
            {egress({{"percent", 5}, {"correlation", 101}}),
             "correlation: must be a number in 0..100", kValue},
            {egress({{"percent", 5}, {"delay_ms", 1}}), "delay_ms: unknown parameter"},
            {egress({{"percent", 5}, {"backend", "tc"}}), "backend: must be one of netem, nftables",
             kValue},
            {egress({{"percent", 5}, {"backend", 1}}), "backend: must be one of netem, nftables"},
            {json::array(), "params: must be an object"},
        });
  }
  EXPECT_EQ(nft.scripts().size(), 0u);
  EXPECT_EQ(qdiscs.mutatingCalls(), 0);
}

TEST(PacketLossValidation, BackendSpecific) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss with_nft(LossBackend::kNftables, &qdiscs, &nft, "");
  expectValidation(with_nft, {{{{"percent", 5}, {"direction", "ingress"}}, ""},
                              {{{"percent", 5}, {"direction", "both"}}, ""},
                              {{{"percent", 5}}, ""},
                              {{{"percent", 5}, {"correlation", 25}},
                               "correlation: needs the netem backend; this kernel has no sch_netem",
                               kValue}});
  PacketLoss with_netem(LossBackend::kNetem, &qdiscs, &nft, "");
  expectValidation(with_netem,
                   {{{{"percent", 5}, {"correlation", 25}, {"direction", "egress"}}, ""}});
}

// netem is an egress qdisc and there is no IFB redirect: anything that needs ingress is refused
// with 422 and what to do instead, never silently applied on egress only (the old behaviour).
TEST(PacketLossValidation, DirectionOnNetemIsEgressOnly) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  for (const json& params :
       {json{{"percent", 5}, {"direction", "both"}}, json{{"percent", 5}, {"direction", "ingress"}},
        json{{"percent", 5}}}) {
    SCOPED_TRACE(params.dump());
    core::Status status = loss.validate(params);
    EXPECT_EQ(status.code(), StatusCode::kUnprocessable);
    EXPECT_EQ(status.message().rfind("direction: \"", 0), 0u) << status.message();
    EXPECT_NE(status.message().find("netem backend cannot do"), std::string::npos);
    EXPECT_NE(status.message().find("no IFB redirect"), std::string::npos);
    EXPECT_NE(status.message().find("\"direction\": \"egress\""), std::string::npos);
    EXPECT_NE(status.message().find("\"backend\": \"nftables\""), std::string::npos);
    // apply() checks the same, before touching anything.
    EXPECT_EQ(loss.apply(lossFault(params)).code(), StatusCode::kUnprocessable);
  }
  EXPECT_NE(loss.validate(json{{"percent", 5}}).message().find("(the default)"), std::string::npos);
  EXPECT_EQ(qdiscs.mutatingCalls(), 0);
}

// --- nftables backend ---

class NftLossTest : public ::testing::Test {
 protected:
  bool tableExists() { return nft_.hasTable("h1", "netdev", "fc_loss_veth_h1"); }

  fakes::FakeNftables nft_;
  fakes::FakeQdiscs qdiscs_;
  PacketLoss loss_{LossBackend::kNftables, &qdiscs_, &nft_, "why"};
};

TEST_F(NftLossTest, ApplyCreatesTableChainsAndRules) {
  ASSERT_TRUE(loss_.apply(lossFault({{"percent", 30}})).isOk());
  EXPECT_TRUE(tableExists());
  EXPECT_EQ(nft_.chains("h1", "netdev", "fc_loss_veth_h1"),
            (std::vector<std::string>{"loss_ingress", "loss_egress"}));
  // table, then chain and rules per hook: five separate transactions.
  auto scripts = nft_.scripts();
  ASSERT_EQ(scripts.size(), 5u);
  for (const auto& call : scripts) EXPECT_EQ(call.netns, "h1");
  EXPECT_EQ(scripts[0].script, "add table netdev fc_loss_veth_h1");
  EXPECT_NE(scripts[2].script.find("numgen random mod 1000000 < 300000 counter drop"),
            std::string::npos);
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
}

// A target of another type reaches neither nftables nor the qdisc adapter, in any call and on
// either backend.
TEST_F(NftLossTest, RefusesTargetsThatAreNotInterfacesWithoutTouchingTheSystem) {
  // Each target type that is not an interface, and how the refusal names it.
  const std::vector<std::pair<Target, std::string>> others = {
      {RdmaPortTarget{"rxe0", 1, 0}, "an rdma_port"},
      {SubnetManagerTarget{"0x2c9", ""}, "a subnet_manager"},
      {ProcessTarget{1234, std::nullopt}, "a process"},
      {TrafficSetTarget{{{"h1", "veth-h1"}}, {{"h2", "eth0"}}}, "a traffic_set"},
  };
  PacketLoss on_netem{LossBackend::kNetem, &qdiscs_, &nft_, ""};
  for (PacketLoss* loss : {&loss_, &on_netem}) {
    for (const auto& [target, type] : others) {
      SCOPED_TRACE(type);
      const Fault other{"packet_loss", target, json{{"percent", 30}}};
      const std::string expected = "packet_loss acts on an interface, not on " + type;
      EXPECT_EQ(loss->capture(other).status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(loss->capture(other).status().message(), expected);
      EXPECT_EQ(loss->apply(other).message(), expected);
      EXPECT_EQ(loss->revert(other, json{{"backend", "nftables"}}).message(), expected);
      EXPECT_EQ(loss->revert(other, json{{"backend", "netem"}}).message(), expected);
      EXPECT_EQ(loss->observe(other).status().message(), expected);
    }
  }
  EXPECT_TRUE(nft_.scripts().empty());
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  EXPECT_TRUE(nft_.tables("h1").empty());
}

TEST_F(NftLossTest, DirectionSelectsHooks) {
  ASSERT_TRUE(loss_.apply(lossFault({{"percent", 1}, {"direction", "egress"}})).isOk());
  EXPECT_EQ(nft_.chains("h1", "netdev", "fc_loss_veth_h1"),
            (std::vector<std::string>{"loss_egress"}));
  ASSERT_TRUE(loss_.apply(lossFault({{"percent", 1}, {"direction", "ingress"}})).isOk());
  EXPECT_EQ(nft_.chains("h1", "netdev", "fc_loss_veth_h1"),
            (std::vector<std::string>{"loss_ingress"}));
}

TEST_F(NftLossTest, ApplyAndRevertAreIdempotent) {
  Fault fault = lossFault({{"percent", 30}});
  auto prior = loss_.capture(fault);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"backend", "nftables"}}));
  ASSERT_TRUE(loss_.apply(fault).isOk());
  // A second apply replaces the table rather than stacking a second set of drop rules.
  fault.params["percent"] = 50;
  ASSERT_TRUE(loss_.apply(fault).isOk());
  EXPECT_EQ(nft_.tables("h1"), (std::vector<std::string>{"netdev fc_loss_veth_h1"}));
  EXPECT_EQ(nft_.chains("h1", "netdev", "fc_loss_veth_h1").size(), 2u);
  EXPECT_NE(nft_.scripts().back().script.find("< 500000"), std::string::npos);

  ASSERT_TRUE(loss_.revert(fault, *prior).isOk());
  EXPECT_FALSE(tableExists());
  const size_t calls = nft_.scripts().size();
  ASSERT_TRUE(loss_.revert(fault, *prior).isOk());
  EXPECT_EQ(nft_.scripts().size(), calls) << "reverting an absent fault must not run nft";
  // Reverting a fault that was never applied, without a prior, also succeeds.
  EXPECT_TRUE(loss_.revert(lossFault({{"percent", 30}}, "other0"), json()).isOk());
}

TEST_F(NftLossTest, HalfAppliedStepStillRevertsFully) {
  // Calls: 1 add table, 2 ingress chain, 3 ingress rules, 4 egress chain, 5 egress rules.
  for (int failing_call = 1; failing_call <= 5; ++failing_call) {
    SCOPED_TRACE(failing_call);
    fakes::FakeNftables nft;
    PacketLoss loss(LossBackend::kNftables, &qdiscs_, &nft, "");
    nft.failOnCall(failing_call,
                   core::Status(StatusCode::kInternal, "nft: Could not process rule", 0));
    Fault fault = lossFault({{"percent", 30}});
    auto prior = loss.capture(fault);
    ASSERT_TRUE(prior.isOk());
    core::Status applied = loss.apply(fault);
    ASSERT_FALSE(applied.isOk());
    EXPECT_EQ(applied.code(), StatusCode::kInternal);
    EXPECT_EQ(applied.message(), "packet_loss apply on veth-h1: nft: Could not process rule");
    EXPECT_EQ(nft.hasTable("h1", "netdev", "fc_loss_veth_h1"), failing_call > 1);
    // The engine reverts after a failed apply: the table is gone, whatever was half-built.
    ASSERT_TRUE(loss.revert(fault, *prior).isOk());
    EXPECT_FALSE(nft.hasTable("h1", "netdev", "fc_loss_veth_h1"));
    EXPECT_TRUE(nft.tables("h1").empty());
  }
}

TEST_F(NftLossTest, RevertFailureIsReportedAndRetryable) {
  Fault fault = lossFault({{"percent", 30}});
  ASSERT_TRUE(loss_.apply(fault).isOk());  // 5 run() calls
  nft_.failOnCall(6, core::Status(StatusCode::kUnavailable, "Device or resource busy", 16));
  core::Status reverted = loss_.revert(fault, json());
  EXPECT_EQ(reverted.code(), StatusCode::kUnavailable);
  EXPECT_EQ(reverted.origin(), 16);
  EXPECT_TRUE(tableExists());
  EXPECT_TRUE(loss_.revert(fault, json()).isOk());
  EXPECT_FALSE(tableExists());

  nft_.setListTableError(core::Status(StatusCode::kPermissionDenied, "nft: denied", 1));
  EXPECT_EQ(loss_.revert(fault, json()).code(), StatusCode::kPermissionDenied);
}

TEST_F(NftLossTest, ObserveReadsCounters) {
  Fault fault = lossFault({{"percent", 30}});
  auto before = loss_.observe(fault);
  ASSERT_TRUE(before.isOk());
  EXPECT_EQ(*before,
            (json{{"backend", "nftables"}, {"active", false}, {"seen", 0}, {"dropped", 0}}));

  ASSERT_TRUE(loss_.apply(fault).isOk());
  auto synthesized = loss_.observe(fault);
  ASSERT_TRUE(synthesized.isOk());
  EXPECT_EQ((*synthesized)["active"], true);

  nft_.setListing("h1", "netdev", "fc_loss_veth_h1", json::parse(R"({"nftables": [
    {"rule": {"expr": [{"counter": {"packets": 200, "bytes": 0}}]}},
    {"rule": {"expr": [{"match": {}}, {"counter": {"packets": 61, "bytes": 0}}, {"drop": null}]}}
  ]})"));
  auto during = loss_.observe(fault);
  ASSERT_TRUE(during.isOk());
  EXPECT_EQ(*during,
            (json{{"backend", "nftables"}, {"active", true}, {"seen", 200}, {"dropped", 61}}));
}

TEST_F(NftLossTest, RejectsIfnamesThatCouldEscapeTheScript) {
  for (const std::string ifname : {"", "a\"b", "eth0; flush ruleset", "waytoolonginterface0"}) {
    Fault fault = lossFault({{"percent", 5}}, ifname);
    EXPECT_EQ(loss_.apply(fault).code(), StatusCode::kInvalidArgument) << ifname;
    EXPECT_EQ(loss_.revert(fault, json()).code(), StatusCode::kInvalidArgument) << ifname;
  }
  EXPECT_TRUE(nft_.scripts().empty());
}

TEST_F(NftLossTest, ApplyValidatesParams) {
  core::Status status = loss_.apply(lossFault({{"percent", 5}, {"correlation", 10}}));
  EXPECT_EQ(status.code(), StatusCode::kUnprocessable) << status.message();
  EXPECT_TRUE(nft_.scripts().empty());
}

// --- netem backend ---

TEST(NetemLossTest, ApplyRevertObserve) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  EXPECT_EQ(loss.info().backend, "netem");
  EXPECT_TRUE(loss.info().available);
  Fault fault = lossFault({{"percent", 12.5}, {"correlation", 25}, {"direction", "egress"}});
  auto prior = loss.capture(fault);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"backend", "netem"}, {"root", priorJson(std::nullopt)}}));

  ASSERT_TRUE(loss.apply(fault).isOk());
  ASSERT_TRUE(loss.apply(fault).isOk());
  auto spec = qdiscs.netem("h1", "veth-h1");
  ASSERT_TRUE(spec.has_value());
  EXPECT_DOUBLE_EQ(spec->loss_percent, 12.5);
  EXPECT_DOUBLE_EQ(spec->loss_correlation, 25);
  EXPECT_EQ(qdiscs.log(), (std::vector<std::string>{"netem create 8001:0", "netem change 8001:0"}));

  qdiscs.setCounters("h1", "veth-h1", sys::QdiscInfo{"netem", 90, 10});
  auto observed = loss.observe(fault);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ(*observed, (json{{"backend", "netem"},
                             {"active", true},
                             {"seen", 100},
                             {"dropped", 10},
                             {"qdisc", "netem"}}));

  ASSERT_TRUE(loss.revert(fault, *prior).isOk());
  ASSERT_TRUE(loss.revert(fault, *prior).isOk());
  EXPECT_FALSE(qdiscs.root("h1", "veth-h1").has_value());
  EXPECT_TRUE(nft.scripts().empty());
  auto after = loss.observe(fault);
  ASSERT_TRUE(after.isOk());
  EXPECT_EQ((*after)["active"], false);
}

sys::NetemSpec delaySpec(int64_t delay_us) {
  sys::NetemSpec spec;
  spec.delay_us = delay_us;
  return spec;
}

sys::SavedQdisc userRoot(const std::string& kind, uint32_t handle, std::vector<uint8_t> options) {
  sys::SavedQdisc saved;
  saved.kind = kind;
  saved.handle = handle;
  saved.attributes = {sys::RawAttribute{2, std::move(options)}};  // TCA_OPTIONS
  return saved;
}

// A user's own root qdisc (a shaper on the port, a traffic-class setup without children) comes
// back byte for byte with its handle. The old code replaced it and deleted the root on revert,
// which left the kernel default: this test failed there.
TEST(NetemLossTest, UsersRootQdiscSurvivesApplyAndRevertExactly) {
  const std::vector<sys::SavedQdisc> roots = {
      userRoot("tbf", 0x00010000, {0x3c, 0x00, 0x01, 0x00, 0x10, 0x27, 0x00, 0x00}),
      userRoot("fq_codel", 0x00050000, {0x08, 0x00, 0x01, 0x00, 0x00, 0x04, 0x00, 0x00}),
      userRoot("netem", 0x00070000,
               sys::encodeNetemOptions(sys::netemAttributes(delaySpec(10000)))),
  };
  for (const sys::SavedQdisc& root : roots) {
    SCOPED_TRACE(root.kind);
    fakes::FakeNftables nft;
    fakes::FakeQdiscs qdiscs;
    qdiscs.installRoot("h1", "veth-h1", root);
    PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
    Fault fault = lossFault({{"percent", 10}, {"direction", "egress"}});
    auto prior = loss.capture(fault);
    ASSERT_TRUE(prior.isOk()) << prior.status().toString();
    EXPECT_EQ((*prior)["backend"], "netem");
    EXPECT_EQ((*prior)["root"]["kind"], root.kind);
    EXPECT_EQ((*prior)["root"]["default"], false);
    // The journal round-trips the prior exactly.
    auto journalled = json::parse(prior->dump());

    ASSERT_TRUE(loss.apply(fault).isOk());
    auto during = qdiscs.netem("h1", "veth-h1");
    ASSERT_TRUE(during.has_value());
    EXPECT_DOUBLE_EQ(during->loss_percent, 10);

    ASSERT_TRUE(loss.revert(fault, journalled).isOk());
    auto after = qdiscs.saveRoot("h1", "veth-h1");
    ASSERT_TRUE(after.isOk());
    ASSERT_TRUE(after->has_value()) << "the user's root qdisc is gone";
    EXPECT_EQ(**after, root);
    // Idempotent: a second revert sees the prior in place and changes nothing.
    const int calls = qdiscs.mutatingCalls();
    ASSERT_TRUE(loss.revert(fault, journalled).isOk());
    EXPECT_EQ(qdiscs.mutatingCalls(), calls);
  }
}

// A revert that fails half-way (netem removed, prior not yet re-created) is retried by the
// engine; the retry puts the user's root back.
TEST(NetemLossTest, RevertInterruptedAfterDeleteIsResumable) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  const sys::SavedQdisc tbf = userRoot("tbf", 0x00010000, {1, 2, 3, 4});
  qdiscs.installRoot("h1", "veth-h1", tbf);
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  Fault fault = lossFault({{"percent", 10}, {"direction", "egress"}});
  auto prior = loss.capture(fault);
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(loss.apply(fault).isOk());  // mutating call 1
  // 2: delete netem (succeeds), 3: restore tbf (fails).
  qdiscs.failOnCall(3, core::Status(StatusCode::kUnavailable, "Device or resource busy", 16));
  core::Status first = loss.revert(fault, *prior);
  EXPECT_EQ(first.code(), StatusCode::kUnavailable);
  EXPECT_EQ(first.message().rfind("netem revert on veth-h1", 0), 0u) << first.message();
  EXPECT_FALSE(qdiscs.root("h1", "veth-h1").has_value());
  ASSERT_TRUE(loss.revert(fault, *prior).isOk());
  auto after = qdiscs.saveRoot("h1", "veth-h1");
  ASSERT_TRUE(after.isOk() && after->has_value());
  EXPECT_EQ(**after, tbf);
}

// A root whose re-creation would not give the user back what they had (an mqprio with its
// per-queue children, an htb or ETS with classes) is refused before anything changes, with the
// reason, instead of being wiped.
TEST(NetemLossTest, UnrestorableRootIsRefusedWithTheReason) {
  struct Case {
    std::string kind;
    uint32_t handle;
    std::string why;
  };
  for (const Case& c : {Case{"mqprio", 0x80010000, "child qdisc pfifo_fast 0:0 hangs off it"},
                        Case{"htb", 0x00010000, "it has classes (1:10)"},
                        Case{"ets", 0x00020000, "a size table (stab) is attached to it"}}) {
    SCOPED_TRACE(c.kind);
    fakes::FakeNftables nft;
    fakes::FakeQdiscs qdiscs;
    sys::SavedQdisc root = userRoot(c.kind, c.handle, {9, 9, 9, 9});
    root.unrestorable = c.why;
    qdiscs.installRoot("h1", "veth-h1", root);
    PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
    Fault fault = lossFault({{"percent", 10}, {"direction", "egress"}});

    auto prior = loss.capture(fault);
    ASSERT_FALSE(prior.isOk());
    EXPECT_EQ(prior.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(prior.status().message(),
              "packet_loss capture on veth-h1: root qdisc " + c.kind + " " +
                  sys::formatQdiscHandle(c.handle) +
                  " on veth-h1 could not be given back after netem: " + c.why +
                  "; remove it or choose another interface (or use \"backend\": \"nftables\", "
                  "which leaves qdiscs alone)");
    // apply without capture (a replayed step) refuses the same way.
    core::Status applied = loss.apply(fault);
    EXPECT_EQ(applied.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(applied.message().find(c.why), std::string::npos);
    EXPECT_EQ(qdiscs.mutatingCalls(), 0);
    auto still = qdiscs.saveRoot("h1", "veth-h1");
    ASSERT_TRUE(still.isOk() && still->has_value());
    EXPECT_EQ(**still, root);
  }
}

// Journals written before the root was saved ({"backend": "netem"} alone) still revert: our
// netem goes, and a root that is not ours is left alone.
TEST(NetemLossTest, OldPriorWithoutRootRemovesOnlyOurNetem) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  Fault fault = lossFault({{"percent", 10}, {"direction", "egress"}});
  ASSERT_TRUE(loss.apply(fault).isOk());
  ASSERT_TRUE(loss.revert(fault, json{{"backend", "netem"}}).isOk());
  EXPECT_FALSE(qdiscs.root("h1", "veth-h1").has_value());
  const sys::SavedQdisc tbf = userRoot("tbf", 0x00010000, {1, 2, 3, 4});
  qdiscs.installRoot("h1", "veth-h1", tbf);
  ASSERT_TRUE(loss.revert(fault, json{{"backend", "netem"}}).isOk());
  auto after = qdiscs.saveRoot("h1", "veth-h1");
  ASSERT_TRUE(after.isOk() && after->has_value());
  EXPECT_EQ(**after, tbf);
}

TEST(NetemLossTest, FailureOnNthCallIsReported) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  qdiscs.failOnCall(1,
                    core::Status(StatusCode::kNotSupported, "sch_netem is not in this kernel", 12));
  Fault fault = lossFault({{"percent", 5}, {"direction", "egress"}});
  core::Status applied = loss.apply(fault);
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_EQ(applied.message(), "netem apply on veth-h1: sch_netem is not in this kernel");
  EXPECT_TRUE(loss.revert(fault, json()).isOk());
}

TEST(NetemLossTest, RevertUsesTheBackendThatApplied) {
  // Applied with nftables before a restart; the new process would pick netem.
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss before(LossBackend::kNftables, &qdiscs, &nft, "");
  Fault fault = lossFault({{"percent", 5}});
  auto prior = before.capture(fault);
  ASSERT_TRUE(before.apply(fault).isOk());
  PacketLoss after(LossBackend::kNetem, &qdiscs, &nft, "");
  ASSERT_TRUE(after.revert(fault, *prior).isOk());
  EXPECT_FALSE(nft.hasTable("h1", "netdev", "fc_loss_veth_h1"));
}

// --- choosing the backend: --loss-backend (RegistryOptions) and params.backend ---

class LossBackendChoiceTest : public ::testing::Test {
 protected:
  Injector* lossOf(Registry& registry) { return registry.find("packet_loss"); }
  KindInfo infoOf(Registry& registry) { return lossOf(registry)->info(); }
  void withoutNetem() {
    qdiscs_.setProbeResult(
        "netem", core::Status(StatusCode::kNotSupported, "sch_netem is not in this kernel", 12));
  }

  fakes::FakeLinks links_;
  fakes::FakeNftables nft_;
  fakes::FakeQdiscs qdiscs_;
};

TEST_F(LossBackendChoiceTest, AutoPrefersNetemAndAFaultCanAskForNftables) {
  auto registry = makeRegistry({&links_, &nft_, &qdiscs_});
  EXPECT_EQ(infoOf(*registry).backend, "netem");
  EXPECT_EQ(nft_.probes().size(), 1u) << "nftables is probed too: a fault may ask for it";
  Injector* loss = lossOf(*registry);

  Fault by_nft = lossFault({{"percent", 20}, {"backend", "nftables"}}, "p1");
  ASSERT_TRUE(loss->validate(by_nft.params).isOk());
  auto prior = loss->capture(by_nft);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"backend", "nftables"}}));
  ASSERT_TRUE(loss->apply(by_nft).isOk());
  EXPECT_TRUE(nft_.hasTable("h1", "netdev", "fc_loss_p1"));
  EXPECT_EQ(nft_.chains("h1", "netdev", "fc_loss_p1"),
            (std::vector<std::string>{"loss_ingress", "loss_egress"}));
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  auto observed = loss->observe(by_nft);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["backend"], "nftables");
  ASSERT_TRUE(loss->revert(by_nft, *prior).isOk());
  EXPECT_FALSE(nft_.hasTable("h1", "netdev", "fc_loss_p1"));

  // Without the param the default (netem) acts.
  Fault by_default = lossFault({{"percent", 20}, {"direction", "egress"}}, "p1");
  ASSERT_TRUE(loss->apply(by_default).isOk());
  EXPECT_TRUE(qdiscs_.netem("h1", "p1").has_value());
  EXPECT_EQ((*loss->observe(by_default))["backend"], "netem");
}

TEST_F(LossBackendChoiceTest, ForcedNftablesOnAKernelWithNetem) {
  auto registry = makeRegistry({&links_, &nft_, &qdiscs_}, {LossBackend::kNftables});
  KindInfo info = infoOf(*registry);
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "nftables");
  EXPECT_EQ(info.reason, "forced by --loss-backend nftables");
  Injector* loss = lossOf(*registry);
  Fault fault = lossFault({{"percent", 20}}, "p1");
  ASSERT_TRUE(loss->validate(fault.params).isOk()) << "direction both is fine on nftables";
  auto prior = loss->capture(fault);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"backend", "nftables"}}));
  ASSERT_TRUE(loss->apply(fault).isOk());
  EXPECT_TRUE(nft_.hasTable("h1", "netdev", "fc_loss_p1"));
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  EXPECT_EQ(loss->validate(json{{"percent", 5}, {"correlation", 10}}).message(),
            "correlation: needs the netem backend; this fault uses nftables");

  // ...and a fault may still ask for netem, which saves the root like the netem kind does.
  Fault by_netem =
      lossFault({{"percent", 20}, {"direction", "egress"}, {"backend", "netem"}}, "p2");
  auto netem_prior = loss->capture(by_netem);
  ASSERT_TRUE(netem_prior.isOk());
  EXPECT_EQ((*netem_prior)["backend"], "netem");
  EXPECT_EQ((*netem_prior)["root"], priorJson(std::nullopt));
  ASSERT_TRUE(loss->apply(by_netem).isOk());
  EXPECT_TRUE(qdiscs_.netem("h1", "p2").has_value());
  ASSERT_TRUE(loss->revert(by_netem, *netem_prior).isOk());
  EXPECT_FALSE(qdiscs_.root("h1", "p2").has_value());
}

// A forced backend the kernel lacks is an ordinary error with the reason, at start-up
// (capabilities), at validation (422) and at apply (501), never a crash.
TEST_F(LossBackendChoiceTest, ForcedNetemOnAKernelWithoutItIsAClearError) {
  withoutNetem();
  auto registry = makeRegistry({&links_, &nft_, &qdiscs_}, {LossBackend::kNetem});
  KindInfo info = infoOf(*registry);
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.backend, "netem");
  EXPECT_EQ(info.reason, "forced by --loss-backend netem, but sch_netem is not in this kernel");
  Injector* loss = lossOf(*registry);

  Fault fault = lossFault({{"percent", 5}, {"direction", "egress"}}, "p1");
  auto prior = loss->capture(fault);
  EXPECT_EQ(prior.status().code(), StatusCode::kNotSupported);
  core::Status applied = loss->apply(fault);
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_EQ(applied.message(),
            "the netem loss backend is not available here: sch_netem is not in this kernel");
  EXPECT_EQ(qdiscs_.mutatingCalls(), 0);
  EXPECT_TRUE(loss->revert(fault, json()).isOk()) << "nothing was applied";

  core::Status validated = loss->validate(json{{"percent", 5}, {"backend", "netem"}});
  EXPECT_EQ(validated.code(), StatusCode::kUnprocessable);
  EXPECT_EQ(validated.message(),
            "backend: the netem loss backend is not available here: sch_netem is not in this "
            "kernel");

  // The other backend still works when a fault names it.
  Fault by_nft = lossFault({{"percent", 5}, {"backend", "nftables"}}, "p1");
  ASSERT_TRUE(loss->validate(by_nft.params).isOk());
  ASSERT_TRUE(loss->apply(by_nft).isOk());
  EXPECT_TRUE(nft_.hasTable("h1", "netdev", "fc_loss_p1"));
}

TEST_F(LossBackendChoiceTest, ForcedNftablesWhereNftablesCannotDrop) {
  nft_.setProbeResult(core::Status(StatusCode::kNotSupported,
                                   "nft: Could not process rule: Operation not supported"));
  auto registry = makeRegistry({&links_, &nft_, &qdiscs_}, {LossBackend::kNftables});
  KindInfo info = infoOf(*registry);
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.backend, "nftables");
  EXPECT_EQ(info.reason,
            "forced by --loss-backend nftables, but nftables cannot drop packets (nft: Could not "
            "process rule: Operation not supported)");
  core::Status applied = lossOf(*registry)->apply(lossFault({{"percent", 5}}, "p1"));
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_TRUE(nft_.scripts().empty());
}

TEST(LossBackendNames, ParseAndPrint) {
  EXPECT_EQ(parseLossBackend("netem"), LossBackend::kNetem);
  EXPECT_EQ(parseLossBackend("nftables"), LossBackend::kNftables);
  EXPECT_EQ(parseLossBackend("none"), std::nullopt);
  EXPECT_EQ(parseLossBackend("NETEM"), std::nullopt);
  EXPECT_EQ(parseLossBackend(""), std::nullopt);
  for (LossBackend b : {LossBackend::kNetem, LossBackend::kNftables}) {
    EXPECT_EQ(parseLossBackend(lossBackendName(b)), b);
  }
}

TEST(UnavailableLossTest, ExplainsWhy) {
  PacketLoss loss(LossBackend::kNone, nullptr, nullptr, "no netem, no nftables");
  KindInfo info = loss.info();
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.backend, "none");
  EXPECT_EQ(info.reason, "no netem, no nftables");
  core::Status applied = loss.apply(lossFault({{"percent", 5}}));
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_NE(applied.message().find("no netem, no nftables"), std::string::npos);
  EXPECT_TRUE(loss.revert(lossFault({{"percent", 5}}), json()).isOk());
}

}  // namespace
}  // namespace fabric_chaos::injectors
