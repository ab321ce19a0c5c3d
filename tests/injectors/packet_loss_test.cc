#include "injectors/loss/packet_loss.h"

#include <gtest/gtest.h>

#include "injectors/sys/qdisc.h"
#include "tests/fakes/fake_nftables.h"
#include "tests/fakes/fake_qdiscs.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

Fault lossFault(json params, const std::string& ifname = "veth-h1") {
  return Fault{"packet_loss", {"h1", ifname}, std::move(params)};
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

struct ValidationCase {
  json params;
  std::string error;  // "" = valid
};

void expectValidation(const PacketLoss& loss, const std::vector<ValidationCase>& cases) {
  for (const ValidationCase& c : cases) {
    core::Status status = loss.validate(c.params);
    if (c.error.empty()) {
      EXPECT_TRUE(status.isOk()) << c.params.dump() << " -> " << status.toString();
    } else {
      EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.params.dump();
      EXPECT_EQ(status.message().rfind(c.error, 0), 0u)
          << c.params.dump() << " -> " << status.message();
    }
  }
}

TEST(PacketLossValidation, CommonToBothBackends) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  for (LossBackend backend : {LossBackend::kNftables, LossBackend::kNetem}) {
    PacketLoss loss(backend, &qdiscs, &nft, "");
    expectValidation(
        loss,
        {
            {{{"percent", 30}}, ""},
            {{{"percent", 0.001}}, ""},
            {{{"percent", 100}, {"direction", "egress"}}, ""},
            {{{"percent", 5}, {"direction", "both"}}, ""},
            {{{"percent", 5}, {"correlation", 0}}, ""},
            {json::object(), "percent: required"},
            {{{"percent", 0}}, "percent: must be a number in (0, 100]"},
            {{{"percent", -1}}, "percent: must be a number in (0, 100]"},
            {{{"percent", 100.01}}, "percent: must be a number in (0, 100]"},
            {{{"percent", "30"}}, "percent: must be a number in (0, 100]"},
            {{{"percent", 5}, {"direction", "out"}},
             "direction: must be one of both, ingress, egress"},
            {{{"percent", 5}, {"direction", 1}}, "direction: must be one of both, ingress, egress"},
            {{{"percent", 5}, {"correlation", 101}}, "correlation: must be a number in 0..100"},
            {{{"percent", 5}, {"delay_ms", 1}}, "delay_ms: unknown parameter"},
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
  expectValidation(with_nft,
                   {{{{"percent", 5}, {"direction", "ingress"}}, ""},
                    {{{"percent", 5}, {"correlation", 25}},
                     "correlation: needs the netem backend; this kernel has no sch_netem"}});
  PacketLoss with_netem(LossBackend::kNetem, &qdiscs, &nft, "");
  expectValidation(with_netem, {{{{"percent", 5}, {"correlation", 25}}, ""},
                                {{{"percent", 5}, {"direction", "ingress"}},
                                 "direction: ingress needs the nftables backend"}});
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
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(nft_.scripts().empty());
}

// --- netem backend ---

TEST(NetemLossTest, ApplyRevertObserve) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  EXPECT_EQ(loss.info().backend, "netem");
  EXPECT_TRUE(loss.info().available);
  Fault fault = lossFault({{"percent", 12.5}, {"correlation", 25}});
  auto prior = loss.capture(fault);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"backend", "netem"}}));

  ASSERT_TRUE(loss.apply(fault).isOk());
  ASSERT_TRUE(loss.apply(fault).isOk());
  auto spec = qdiscs.netem("h1", "veth-h1");
  ASSERT_TRUE(spec.has_value());
  EXPECT_DOUBLE_EQ(spec->loss_percent, 12.5);
  EXPECT_DOUBLE_EQ(spec->loss_correlation, 25);

  qdiscs.setRoot("h1", "veth-h1", sys::QdiscInfo{"netem", 90, 10});
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

TEST(NetemLossTest, FailureOnNthCallIsReported) {
  fakes::FakeNftables nft;
  fakes::FakeQdiscs qdiscs;
  PacketLoss loss(LossBackend::kNetem, &qdiscs, &nft, "");
  qdiscs.failOnCall(1,
                    core::Status(StatusCode::kNotSupported, "sch_netem is not in this kernel", 12));
  core::Status applied = loss.apply(lossFault({{"percent", 5}}));
  EXPECT_EQ(applied.code(), StatusCode::kNotSupported);
  EXPECT_EQ(applied.message(), "packet_loss apply on veth-h1: sch_netem is not in this kernel");
  EXPECT_TRUE(loss.revert(lossFault({{"percent", 5}}), json()).isOk());
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
