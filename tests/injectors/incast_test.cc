// incast against fakes: the schema, the target's rules, the generators' command lines, and
// apply/revert/observe as emitter starts and stops (sink first up, last down; nothing left when
// a start fails), with goodput shares and Jain's fairness index in observe.

#include "injectors/traffic/incast.h"

#include <gtest/gtest.h>

#include "injectors/traffic/traffic_generators.h"
#include "tests/fakes/fake_emitters.h"
#include "tests/fakes/fake_links.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

Fault incast(std::vector<InterfaceTarget> sources, InterfaceTarget sink, json params = {}) {
  if (params.is_null()) params = json::object();
  return Fault{"incast", TrafficSetTarget{std::move(sources), {std::move(sink)}},
               std::move(params)};
}

class IncastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ns : {"t-h0", "t-h1", "t-h2"}) {
      links_.addLink(ns, {"eth0", 0, true, true, "", ""});
    }
    links_.setIpv4("t-h2", "eth0", {"10.200.0.3"});
  }
  fakes::FakeLinks links_;
  fakes::FakeEmitters emitters_;
  Incast incast_{&links_, &emitters_, "/usr/bin/fabric-chaos"};
  const Fault fault_ = incast({{"t-h0", "eth0"}, {"t-h1", "eth0"}}, {"t-h2", "eth0"},
                              {{"flows_per_source", 2}, {"rate_mbps", 40}, {"dscp", 26}});
};

TEST_F(IncastTest, ValidatesTheSchema) {
  EXPECT_TRUE(incast_.validate(json::object()).isOk());
  EXPECT_EQ(incast_.validate({{"flows_per_source", 0}}).message(),
            "flows_per_source: must be an integer in 1..64");
  EXPECT_EQ(incast_.validate({{"dscp", 64}}).message(), "dscp: must be an integer in 0..63");
  EXPECT_EQ(incast_.validate({{"message_bytes", 10}}).message(),
            "message_bytes: must be an integer in 1024..16777216");
  EXPECT_EQ(incast_.validate({{"rate_mbps", 0}}).message(),
            "rate_mbps: must be an integer in 1..400000");
  EXPECT_EQ(incast_.validate({{"congestion_control", "vegas"}}).message(),
            "congestion_control: must be one of cubic, reno, bbr, dctcp");
  EXPECT_EQ(
      incast_.validate({{"sinks", 1}}).message(),
      "sinks: unknown parameter (expected transport, flows_per_source, message_bytes, rate_mbps, "
      "dscp, "
      "congestion_control, port)");
}

TEST_F(IncastTest, RefusesTargetsThatAreNotOneSinkAndDistinctSources) {
  auto refusal = [&](const Fault& fault) { return incast_.apply(fault).message(); };
  EXPECT_EQ(refusal(Fault{"incast", InterfaceTarget{"t-h0", "eth0"}, json::object()}),
            "incast acts on traffic_set targets, not t-h0/eth0");
  EXPECT_EQ(refusal(incast({{"t-h2", "eth0"}}, {"t-h2", "eth0"})),
            "target.sources[0]: t-h2/eth0 is the sink; it cannot send to itself");
  EXPECT_EQ(refusal(incast({{"t-h0", "eth0"}, {"t-h0", "eth0"}}, {"t-h2", "eth0"})),
            "target.sources[1]: t-h0/eth0 is listed twice");
  EXPECT_EQ(refusal(incast({}, {"t-h2", "eth0"})), "target.sources: at least one source is needed");
  EXPECT_EQ(refusal(Fault{"incast", TrafficSetTarget{{{"t-h0", "eth0"}}, {}}, json::object()}),
            "target.sinks: incast has exactly one sink, 0 given");
  EXPECT_TRUE(emitters_.started.empty());
}

TEST_F(IncastTest, CommandLinesCarryTheParameters) {
  EXPECT_EQ(Incast::sinkArgv("/x", "10.0.0.3", json::object()),
            (std::vector<std::string>{"/x", "traffic", "sink", "--listen", "10.0.0.3:7700"}));
  EXPECT_EQ(Incast::sourceArgv("/x", "10.0.0.3", {{"port", 9000}}),
            (std::vector<std::string>{"/x", "traffic", "source", "--connect", "10.0.0.3:9000",
                                      "--flows", "1", "--message-bytes", "131072", "--dscp", "0"}))
      << "no --rate-mbps: unlimited";
  EXPECT_EQ(Incast::sourceArgv("/x", "10.0.0.3", {{"congestion_control", "cubic"}}).back(),
            "cubic");
  EXPECT_EQ(Incast::sourceArgv("/x", "10.0.0.3", fault_.params),
            (std::vector<std::string>{"/x", "traffic", "source", "--connect", "10.0.0.3:7700",
                                      "--flows", "2", "--message-bytes", "131072", "--dscp", "26",
                                      "--rate-mbps", "40"}));
}

TEST_F(IncastTest, CaptureNeedsEveryEndpointAndAnAddressOnTheSink) {
  auto prior = incast_.capture(fault_);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"sink_address", "10.200.0.3"}}));
  links_.setIpv4("t-h2", "eth0", {});
  auto no_address = incast_.capture(fault_);
  ASSERT_FALSE(no_address.isOk());
  EXPECT_EQ(no_address.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(no_address.status().message().find("t-h2/eth0 has no IPv4 address"), std::string::npos);
  links_.removeLink("t-h1", "eth0");
  EXPECT_EQ(incast_.capture(fault_).status().code(), StatusCode::kNotFound);
}

TEST_F(IncastTest, ApplyStartsTheSinkThenEachSourceInItsNamespace) {
  ASSERT_TRUE(incast_.apply(fault_).isOk());
  ASSERT_EQ(emitters_.started.size(), 3u);
  EXPECT_EQ(emitters_.started[0].key, "incast sink t-h2/eth0");
  EXPECT_EQ(emitters_.started[0].netns, "t-h2");
  EXPECT_EQ(emitters_.started[0].argv[4], "10.200.0.3:7700");
  EXPECT_EQ(emitters_.started[1].key, "incast source t-h0/eth0 to t-h2/eth0");
  EXPECT_EQ(emitters_.started[1].netns, "t-h0");
  EXPECT_EQ(emitters_.started[2].netns, "t-h1");
  EXPECT_EQ(emitters_.started[2].argv[4], "10.200.0.3:7700");

  ASSERT_TRUE(incast_.revert(fault_, json::object()).isOk());
  EXPECT_EQ(emitters_.stopped,
            (std::vector<std::string>{"incast source t-h0/eth0 to t-h2/eth0 1000",
                                      "incast source t-h1/eth0 to t-h2/eth0 1000",
                                      "incast sink t-h2/eth0 1000"}));
  EXPECT_TRUE(emitters_.running.empty());
}

TEST_F(IncastTest, AFailedSourceStopsWhatWasStarted) {
  emitters_.fail_key = "incast source t-h1/eth0 to t-h2/eth0";
  const core::Status status = incast_.apply(fault_);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("incast source on t-h1/eth0"), std::string::npos);
  EXPECT_EQ(emitters_.stopped,
            (std::vector<std::string>{"incast source t-h0/eth0 to t-h2/eth0 1000",
                                      "incast sink t-h2/eth0 1000"}));
  EXPECT_TRUE(emitters_.running.empty()) << "no traffic is left on the fabric";
}

TEST_F(IncastTest, ObserveReportsEachGeneratorAndTheFairnessOfTheSources) {
  ASSERT_TRUE(incast_.apply(fault_).isOk());
  emitters_.running["incast source t-h0/eth0 to t-h2/eth0"].last_report = {{"bytes", 300},
                                                                           {"t_ms", 0.024}};
  emitters_.running["incast source t-h1/eth0 to t-h2/eth0"].last_report = {{"bytes", 100}};
  auto observed = incast_.observe(fault_);
  ASSERT_TRUE(observed.isOk()) << observed.status().toString();
  EXPECT_EQ((*observed)["running"], true);
  EXPECT_EQ((*observed)["sink"]["endpoint"], "t-h2/eth0");
  EXPECT_EQ((*observed)["sources"][1]["endpoint"], "t-h1/eth0");
  EXPECT_EQ((*observed)["source_bytes"], (json{300.0, 100.0}));
  // 300 bytes in 0.024 ms: 100 Mbit/s; no clock in the report: 0.
  EXPECT_DOUBLE_EQ((*observed)["source_goodput_mbps"][0].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ((*observed)["source_goodput_mbps"][1].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ((*observed)["jain_fairness"].get<double>(), 0.8);  // 400^2 / (2 * 1e5)

  auto& sink = emitters_.running["incast sink t-h2/eth0"];
  sink.running = false;
  sink.exit_code = 1;
  sink.log_tail = "cannot listen";
  observed = incast_.observe(fault_);
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ((*observed)["running"], false);
  EXPECT_EQ((*observed)["exit_code"], 1);
  EXPECT_EQ((*observed)["log"], "cannot listen");
}

// A set cut into parts (endpoints behind several agents): each agent runs its part alone, a
// sources part sending to the address it was given, never reading the sink's interface.
TEST_F(IncastTest, EachPartRunsItsOwnGeneratorsOnly) {
  Fault sink_part = fault_;
  TrafficSetTarget sink_set{{}, {{"t-h2", "eth0"}}};
  sink_set.part = TrafficPart::kSink;
  sink_part.target = sink_set;
  ASSERT_TRUE(incast_.capture(sink_part).isOk());
  ASSERT_TRUE(incast_.apply(sink_part).isOk());
  ASSERT_EQ(emitters_.started.size(), 1u);
  EXPECT_EQ(emitters_.started[0].key, "incast sink t-h2/eth0");
  auto observed = incast_.observe(sink_part);
  ASSERT_TRUE(observed.isOk()) << observed.status().toString();
  EXPECT_TRUE(observed->contains("sink"));
  EXPECT_EQ((*observed)["sources"], json::array());

  Fault sources_part = fault_;
  // The sink is another host's eth0: the same name as the source's is no conflict.
  links_.addLink("", {"eth0", 0, true, true, "", ""});
  TrafficSetTarget sources_set{{{"", "eth0"}}, {{"", "eth0"}}};
  sources_set.part = TrafficPart::kSources;
  sources_set.sink_address = "10.201.0.2";
  sources_part.target = sources_set;
  sources_part.params = {{"transport", "verbs"}};
  auto prior = incast_.capture(sources_part);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ((*prior)["sink_address"], "10.201.0.2");
  ASSERT_TRUE(incast_.apply(sources_part).isOk());
  ASSERT_EQ(emitters_.started.size(), 2u);
  const auto& source = emitters_.started[1];
  EXPECT_EQ(source.key, "incast source eth0 to 10.201.0.2");
  EXPECT_EQ(source.argv[4], "10.201.0.2:7700");
  EXPECT_NE(std::find(source.argv.begin(), source.argv.end(), "verbs"), source.argv.end());
  observed = incast_.observe(sources_part);
  ASSERT_TRUE(observed.isOk());
  EXPECT_FALSE(observed->contains("sink"));
  EXPECT_EQ((*observed)["sources"].size(), 1u);

  ASSERT_TRUE(incast_.revert(sources_part, json::object()).isOk());
  ASSERT_TRUE(incast_.revert(sink_part, json::object()).isOk());
  EXPECT_EQ(emitters_.stopped,
            (std::vector<std::string>{"incast source eth0 to 10.201.0.2 1000",
                                      "incast sink t-h2/eth0 1000"}));

  // A sink part with sources, or a sources part without an address, is malformed.
  sink_set.sources = {{"t-h0", "eth0"}};
  sink_part.target = sink_set;
  EXPECT_EQ(incast_.apply(sink_part).code(), StatusCode::kInvalidArgument);
  sources_set.sink_address.clear();
  sources_part.target = sources_set;
  EXPECT_EQ(incast_.apply(sources_part).code(), StatusCode::kInvalidArgument);
}

TEST_F(IncastTest, VerbsFlowsTakeTheTransportAndRefuseACongestionControl) {
  EXPECT_EQ(Incast::sinkArgv("/x", "10.0.0.3", {{"transport", "verbs"}}),
            (std::vector<std::string>{"/x", "traffic", "sink", "--listen", "10.0.0.3:7700",
                                      "--transport", "verbs"}));
  const auto source = Incast::sourceArgv("/x", "10.0.0.3", {{"transport", "verbs"}});
  EXPECT_NE(std::find(source.begin(), source.end(), "--transport"), source.end());
  EXPECT_EQ(Incast::sourceArgv("/x", "10.0.0.3", json::object()),
            Incast::sourceArgv("/x", "10.0.0.3", {{"transport", "tcp"}}))
      << "tcp is the generator's default: no flag";
  EXPECT_EQ(incast_.validate({{"transport", "verbs"}, {"congestion_control", "cubic"}}).message(),
            "congestion_control: TCP's; verbs flows have no congestion control to choose (RoCE's "
            "is the NIC's, DCQCN on real hardware)");
  EXPECT_EQ(incast_.validate({{"transport", "udp"}}).message(),
            "transport: must be one of tcp, verbs");
}

}  // namespace
}  // namespace fabric_chaos::injectors
