// The target union's codec, descriptions and lock keys (injectors/model/target.h).

#include "injectors/model/target.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;
using nlohmann::json;

TrafficSetTarget incast() {
  return TrafficSetTarget{{{"fcl-h0", "eth0"}, {"fcl-h1", "eth0"}}, {{"fcl-h2", "eth0"}}};
}

TEST(TargetType, NamesRoundTrip) {
  const std::vector<std::pair<TargetType, std::string>> names = {
      {TargetType::kInterface, "interface"},          {TargetType::kRdmaPort, "rdma_port"},
      {TargetType::kSubnetManager, "subnet_manager"}, {TargetType::kProcess, "process"},
      {TargetType::kTrafficSet, "traffic_set"},       {TargetType::kIbPort, "ib_port"},
  };
  for (const auto& [type, name] : names) {
    EXPECT_EQ(toString(type), name);
    EXPECT_EQ(parseTargetType(name), type);
  }
  EXPECT_EQ(parseTargetType("Interface"), std::nullopt);
  EXPECT_EQ(parseTargetType(""), std::nullopt);
}

// Every alternative: its type, its tagged JSON, the way back, its description and lock keys.
TEST(TargetCodec, EveryAlternativeRoundTrips) {
  struct Case {
    Target target;
    TargetType type;
    json encoded;
    std::string described;
    std::vector<std::string> keys;
  };
  const std::vector<Case> cases = {
      {InterfaceTarget{"fcl-sw0", "p1"},
       TargetType::kInterface,
       {{"type", "interface"}, {"netns", "fcl-sw0"}, {"ifname", "p1"}},
       "fcl-sw0/p1",
       {"if/fcl-sw0/p1"}},
      {InterfaceTarget{"", "eth0"},
       TargetType::kInterface,
       {{"type", "interface"}, {"netns", ""}, {"ifname", "eth0"}},
       "eth0",
       {"if//eth0"}},
      {RdmaPortTarget{"rxe0", 1, 0},
       TargetType::kRdmaPort,
       {{"type", "rdma_port"}, {"device", "rxe0"}, {"port", 1}, {"gid_index", 0}},
       "RDMA port rxe0:1 (gid 0)",
       {"rdma/rxe0/1"}},
      {RdmaPortTarget{"mlx5_1", 2, 3},
       TargetType::kRdmaPort,
       {{"type", "rdma_port"}, {"device", "mlx5_1"}, {"port", 2}, {"gid_index", 3}},
       "RDMA port mlx5_1:2 (gid 3)",
       {"rdma/mlx5_1/2"}},
      {SubnetManagerTarget{"0x0002C903000A1B2C", ""},
       TargetType::kSubnetManager,
       {{"type", "subnet_manager"}, {"port_guid", "0x0002C903000A1B2C"}},
       "subnet manager 0x0002C903000A1B2C",
       {"sm/guid/0x0002c903000a1b2c"}},
      {SubnetManagerTarget{"", "sm1"},
       TargetType::kSubnetManager,
       {{"type", "subnet_manager"}, {"node", "sm1"}},
       "subnet manager on node sm1",
       {"sm/node/sm1"}},
      {SubnetManagerTarget{"", "h0", "fcib-subnet"},
       TargetType::kSubnetManager,
       {{"type", "subnet_manager"}, {"node", "h0"}, {"netns", "fcib-subnet"}},
       "subnet manager on node h0",
       {"sm/node/h0/fcib-subnet"}},
      {IbPortTarget{"l0", 3, "fcib-subnet"},
       TargetType::kIbPort,
       {{"type", "ib_port"}, {"node", "l0"}, {"port", 3}, {"netns", "fcib-subnet"}},
       "IB port l0[3]",
       {"ib/fcib-subnet/l0/3"}},
      {IbPortTarget{"s1", 36, ""},
       TargetType::kIbPort,
       {{"type", "ib_port"}, {"node", "s1"}, {"port", 36}},
       "IB port s1[36]",
       {"ib//s1/36"}},
      {ProcessTarget{4242, std::nullopt},
       TargetType::kProcess,
       {{"type", "process"}, {"pid", 4242}},
       "process 4242",
       {"process/pid/4242", "process/*"}},
      {ProcessTarget{std::nullopt, 3},
       TargetType::kProcess,
       {{"type", "process"}, {"rank", 3}},
       "workload rank 3",
       {"process/rank/3", "process/*"}},
      {ProcessTarget{std::nullopt, std::nullopt, "ib_write_bw"},
       TargetType::kProcess,
       {{"type", "process"}, {"name", "ib_write_bw"}},
       "processes named ib_write_bw",
       {"process/name/ib_write_bw", "process/*"}},
      {ProcessTarget{},
       TargetType::kProcess,
       {{"type", "process"}},
       "every shim-loaded process",
       {"process/*"}},
      {incast(),
       TargetType::kTrafficSet,
       {{"type", "traffic_set"},
        {"sources",
         {{{"netns", "fcl-h0"}, {"ifname", "eth0"}}, {{"netns", "fcl-h1"}, {"ifname", "eth0"}}}},
        {"sinks", {{{"netns", "fcl-h2"}, {"ifname", "eth0"}}}}},
       "traffic from fcl-h0/eth0, fcl-h1/eth0 to fcl-h2/eth0",
       {"if/fcl-h0/eth0", "if/fcl-h1/eth0", "if/fcl-h2/eth0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.described);
    EXPECT_EQ(typeOf(c.target), c.type);
    EXPECT_EQ(toJson(c.target), c.encoded);
    auto back = targetFromJson(c.encoded);
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    EXPECT_EQ(*back, c.target);
    EXPECT_EQ(describe(c.target), c.described);
    EXPECT_EQ(lockKeys(c.target), c.keys);
    EXPECT_EQ(interfaceOf(c.target) != nullptr, c.type == TargetType::kInterface);
  }
}

// The previous version wrote interface targets without a type tag; journals it left behind
// must still decode, or an upgrade would strand the faults they record.
TEST(TargetCodec, DecodesTheUntaggedFormOfThePreviousVersionAsAnInterface) {
  const json journal_entry = json::parse(R"({
    "kind": "packet_loss",
    "target": {"netns": "fcl-sw0", "ifname": "p2"},
    "params": {"percent": 10, "direction": "egress"}
  })");
  auto target = targetFromJson(journal_entry["target"]);
  ASSERT_TRUE(target.isOk()) << target.status().toString();
  EXPECT_EQ(*target, Target(InterfaceTarget{"fcl-sw0", "p2"}));
  // netns was optional then, too.
  auto bare = targetFromJson(json{{"ifname", "eth0"}});
  ASSERT_TRUE(bare.isOk()) << bare.status().toString();
  EXPECT_EQ(*bare, Target(InterfaceTarget{"", "eth0"}));
}

TEST(TargetCodec, OptionalFieldsTakeTheirDefaults) {
  auto port = targetFromJson(json{{"type", "rdma_port"}, {"device", "rxe0"}});
  ASSERT_TRUE(port.isOk()) << port.status().toString();
  EXPECT_EQ(*port, Target(RdmaPortTarget{"rxe0", 1, 0}));
  // Traffic-set endpoints may carry the interface tag.
  auto set = targetFromJson(json{{"type", "traffic_set"},
                                 {"sources", {{{"type", "interface"}, {"ifname", "a"}}}},
                                 {"sinks", {{{"ifname", "b"}}}}});
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  EXPECT_EQ(*set, Target(TrafficSetTarget{{{"", "a"}}, {{"", "b"}}}));

  // Steered paths round-trip and are checked: one steer per source.
  TrafficSetTarget steered{{{"t-h0", "eth0"}}, {{"t-h2", "eth0"}}};
  steered.paths.push_back({{"t-l0", "up1"}, {{"t-l0", "br0", "up1"}}});
  const json doc = toJson(Target(steered));
  EXPECT_EQ(doc["paths"],
            (json{{{"port", {{"netns", "t-l0"}, {"ifname", "up1"}}},
                   {"steers", {{{"netns", "t-l0"}, {"ingress", "br0"}, {"egress", "up1"}}}}}}));
  auto back = targetFromJson(doc);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(*back, Target(steered));
  EXPECT_EQ(describe(*back), "traffic from t-h0/eth0 to t-h2/eth0 via t-l0/up1");
  EXPECT_EQ(lockKeys(*back), (std::vector<std::string>{"if/t-h0/eth0", "if/t-h2/eth0"}))
      << "the loaded port is shared with the training traffic, not held";
  json no_steer = doc;
  no_steer["paths"][0]["steers"] = json::array();
  EXPECT_EQ(targetFromJson(no_steer).status().message(),
            "target.paths[0].steers: must be an array of one steer per source (1)");
  EXPECT_FALSE(toJson(Target(TrafficSetTarget{{{"", "a"}}, {{"", "b"}}})).contains("paths"));
}

TEST(TargetCodec, RejectsMalformedNamingTheField) {
  struct Case {
    json doc;
    std::string message;
  };
  const std::vector<Case> cases = {
      {json("eth0"), "target: must be an object"},
      {json::array(), "target: must be an object"},
      {json::object(), "target.ifname: required"},
      {json{{"ifname", ""}}, "target.ifname: must be a non-empty string"},
      {json{{"ifname", 7}}, "target.ifname: must be a non-empty string"},
      {json{{"ifname", "e"}, {"netns", 1}}, "target.netns: must be a string"},
      {json{{"ifname", "e"}, {"host", "h1"}}, "target.host: unknown field"},
      {json{{"type", 1}, {"ifname", "e"}}, "target.type: must be a string"},
      {json{{"type", "switch"}},
       "target.type: unknown target type \"switch\" (expected one of "
       "interface, rdma_port, subnet_manager, process, traffic_set, ib_port)"},
      {json{{"type", "interface"}, {"device", "rxe0"}, {"ifname", "e"}},
       "target.device: unknown field"},
      {json{{"type", "rdma_port"}}, "target.device: required"},
      {json{{"type", "rdma_port"}, {"device", "a/b"}}, "target.device: 'a/b' is not a device name"},
      {json{{"type", "rdma_port"}, {"device", "rxe0"}, {"port", 0}},
       "target.port: must be an integer in 1..255"},
      {json{{"type", "rdma_port"}, {"device", "rxe0"}, {"port", "1"}},
       "target.port: must be an integer in 1..255"},
      {json{{"type", "rdma_port"}, {"device", "rxe0"}, {"port", 1.5}},
       "target.port: must be an integer in 1..255"},
      {json{{"type", "rdma_port"}, {"device", "rxe0"}, {"gid_index", -1}},
       "target.gid_index: must be an integer in 0..65535"},
      {json{{"type", "rdma_port"}, {"device", "rxe0"}, {"ifname", "e"}},
       "target.ifname: unknown field"},
      {json{{"type", "subnet_manager"}}, "target: set exactly one of port_guid, node"},
      {json{{"type", "subnet_manager"}, {"port_guid", "0x1"}, {"node", "sm1"}},
       "target: set exactly one of port_guid, node"},
      {json{{"type", "subnet_manager"}, {"port_guid", "2c9"}},
       "target.port_guid: must be 0x followed by 1 to 16 hex digits"},
      {json{{"type", "subnet_manager"}, {"port_guid", "0x00000000000000000"}},
       "target.port_guid: must be 0x followed by 1 to 16 hex digits"},
      {json{{"type", "subnet_manager"}, {"port_guid", 12}}, "target.port_guid: must be a string"},
      {json{{"type", "subnet_manager"}, {"node", ""}}, "target.node: must be a non-empty string"},
      {json{{"type", "subnet_manager"}, {"node", "h0"}, {"netns", 3}},
       "target.netns: must be a string"},
      {json{{"type", "ib_port"}, {"port", 1}}, "target.node: required"},
      {json{{"type", "ib_port"}, {"node", "l0"}}, "target.port: required"},
      {json{{"type", "ib_port"}, {"node", "l0"}, {"port", 255}},
       "target.port: must be an integer in 1..254"},
      {json{{"type", "ib_port"}, {"node", "l\"0"}, {"port", 1}},
       "target.node: must not contain quotes, brackets or newlines"},
      {json{{"type", "ib_port"}, {"node", "l0"}, {"port", 1}, {"lid", 3}},
       "target.lid: unknown field"},
      {json{{"type", "process"}, {"pid", 1}, {"rank", 0}},
       "target: set at most one of pid, rank, name (none: every process)"},
      {json{{"type", "process"}, {"rank", 0}, {"name", "python"}},
       "target: set at most one of pid, rank, name (none: every process)"},
      {json{{"type", "process"}, {"name", ""}}, "target.name: must be a non-empty string"},
      {json{{"type", "process"}, {"name", 7}}, "target.name: must be a non-empty string"},
      {json{{"type", "process"}, {"name", "a_sixteen_chars_"}},
       "target.name: must be a process name as /proc/PID/comm shows it (1 to 15 characters, no "
       "newline)"},
      {json{{"type", "process"}, {"comm", "python"}}, "target.comm: unknown field"},
      {json{{"type", "process"}, {"pid", 0}}, "target.pid: must be an integer in 1..4194304"},
      {json{{"type", "process"}, {"rank", -1}}, "target.rank: must be an integer in 0..2147483647"},
      {json{{"type", "traffic_set"}, {"sinks", {{{"ifname", "b"}}}}}, "target.sources: required"},
      {json{{"type", "traffic_set"}, {"sources", json::array()}, {"sinks", {{{"ifname", "b"}}}}},
       "target.sources: must be a non-empty array"},
      {json{{"type", "traffic_set"}, {"sources", {{{"ifname", "a"}}}}}, "target.sinks: required"},
      {json{{"type", "traffic_set"},
            {"sources", {{{"ifname", "a"}}, {{"netns", "x"}}}},
            {"sinks", {{{"ifname", "b"}}}}},
       "target.sources[1].ifname: required"},
      {json{{"type", "traffic_set"},
            {"sources", {{{"ifname", "a"}}}},
            {"sinks", {{{"type", "rdma_port"}, {"device", "rxe0"}}}}},
       "target.sinks[0].type: must be \"interface\" here"},
  };
  for (const Case& c : cases) {
    auto target = targetFromJson(c.doc);
    ASSERT_FALSE(target.isOk()) << c.doc.dump();
    EXPECT_EQ(target.status().code(), StatusCode::kInvalidArgument) << c.doc.dump();
    EXPECT_EQ(target.status().message(), c.message) << c.doc.dump();
  }
  // The path is the caller's: a nested target names its own place.
  auto nested = targetFromJson(json::object(), "fault.target");
  EXPECT_EQ(nested.status().message(), "fault.target.ifname: required");
}

// A traffic set occupies its endpoints: locking it conflicts with a fault on any of them, and an
// interface that is both a source and a sink is held once.
TEST(TargetCodec, TrafficPartsRoundTripAndHoldOnlyTheirOwnEndpoints) {
  TrafficSetTarget sink{{}, {{"", "eth0"}}};
  sink.part = TrafficPart::kSink;
  TrafficSetTarget sources{{{"", "eth0"}}, {{"", "eth0"}}};
  sources.part = TrafficPart::kSources;
  sources.sink_address = "10.201.0.2";
  for (const TrafficSetTarget& part : {sink, sources}) {
    const json doc = toJson(Target(part));
    auto back = targetFromJson(doc);
    ASSERT_TRUE(back.isOk()) << doc.dump() << ": " << back.status().toString();
    EXPECT_EQ(*back, Target(part)) << doc.dump();
  }
  EXPECT_EQ(toJson(Target(sources))["part"], "sources");
  EXPECT_EQ(toJson(Target(sink))["part"], "sink");
  EXPECT_FALSE(toJson(Target(incast())).contains("part")) << "a whole set says nothing";
  EXPECT_EQ(describe(Target(sink)), "traffic sink eth0");
  EXPECT_EQ(describe(Target(sources)), "traffic from eth0 to 10.201.0.2 (eth0)");
  EXPECT_EQ(lockKeys(Target(sources)), (std::vector<std::string>{"if//eth0"}));
  EXPECT_EQ(localEndpoints(sources), (std::vector<InterfaceTarget>{{"", "eth0"}}));
  EXPECT_EQ(localEndpoints(incast()).size(), 3u);

  json bad = toJson(Target(sources));
  bad.erase("sink_address");
  EXPECT_EQ(targetFromJson(bad).status().message(),
            "target.sink_address: required on a sources part");
  bad = toJson(Target(sink));
  bad["part"] = "middle";
  EXPECT_EQ(targetFromJson(bad).status().message(), "target.part: must be \"sink\" or \"sources\"");
  bad["part"] = "sink";
  bad["sink_address"] = "10.0.0.1";
  EXPECT_EQ(targetFromJson(bad).status().message(),
            "target.sink_address: only a sources part carries the sink's address");
}

TEST(TargetLockKeys, ATrafficSetOverlapsEachOfItsInterfaces) {
  const std::vector<std::string> set_keys = lockKeys(incast());
  const std::vector<std::string> port_keys = lockKeys(InterfaceTarget{"fcl-h1", "eth0"});
  ASSERT_EQ(port_keys.size(), 1u);
  EXPECT_NE(std::find(set_keys.begin(), set_keys.end(), port_keys[0]), set_keys.end());
  const std::vector<std::string> elsewhere = lockKeys(InterfaceTarget{"fcl-h3", "eth0"});
  EXPECT_EQ(std::find(set_keys.begin(), set_keys.end(), elsewhere[0]), set_keys.end());

  const TrafficSetTarget loop{{{"fcl-h0", "eth0"}}, {{"fcl-h0", "eth0"}, {"fcl-h1", "eth0"}}};
  EXPECT_EQ(lockKeys(loop), (std::vector<std::string>{"if/fcl-h0/eth0", "if/fcl-h1/eth0"}));
}

TEST(TargetLockKeys, OneSubnetManagerPortHasOneKeyHoweverItsGuidIsWritten) {
  EXPECT_EQ(lockKeys(SubnetManagerTarget{"0x2C9", ""}),
            lockKeys(SubnetManagerTarget{"0x00000000000002c9", ""}));
  // An RDMA port's GID index selects an address, not another port.
  EXPECT_EQ(lockKeys(RdmaPortTarget{"rxe0", 1, 0}), lockKeys(RdmaPortTarget{"rxe0", 1, 5}));
}

// Keys are compared for equality: every process target shares "process/*", so a fault on every
// process collides with one on any process of the same host, and so do a pid and a rank target,
// which may name one process.
TEST(TargetLockKeys, EveryProcessTargetCollidesWithEveryOtherProcessTarget) {
  const std::vector<Target> targets = {ProcessTarget{}, ProcessTarget{1234, std::nullopt},
                                       ProcessTarget{std::nullopt, 3},
                                       ProcessTarget{std::nullopt, std::nullopt, "python"}};
  for (const Target& a : targets) {
    for (const Target& b : targets) {
      const std::vector<std::string> keys_a = lockKeys(a);
      const std::vector<std::string> keys_b = lockKeys(b);
      EXPECT_TRUE(std::any_of(keys_a.begin(), keys_a.end(),
                              [&](const std::string& key) {
                                return std::find(keys_b.begin(), keys_b.end(), key) != keys_b.end();
                              }))
          << describe(a) << " and " << describe(b);
    }
  }
  EXPECT_TRUE(isEveryProcess(ProcessTarget{}));
  EXPECT_FALSE(isEveryProcess(ProcessTarget{std::nullopt, std::nullopt, "python"}));
  EXPECT_FALSE(isEveryProcess(ProcessTarget{std::nullopt, 0}));
  // An interface is no process.
  const std::vector<std::string> interface_keys = lockKeys(InterfaceTarget{"", "eth0"});
  EXPECT_EQ(std::find(interface_keys.begin(), interface_keys.end(), "process/*"),
            interface_keys.end());
}

TEST(RequireInterface, NamesTheKindAndTheTargetType) {
  auto ok = requireInterface("link_flap", InterfaceTarget{"ns", "eth0"});
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->ifname, "eth0");
  const std::vector<std::pair<Target, std::string>> others = {
      {RdmaPortTarget{"rxe0", 1, 0}, "link_flap acts on an interface, not on an rdma_port"},
      {SubnetManagerTarget{"", "sm1"}, "link_flap acts on an interface, not on a subnet_manager"},
      {ProcessTarget{std::nullopt, 0}, "link_flap acts on an interface, not on a process"},
      {incast(), "link_flap acts on an interface, not on a traffic_set"},
  };
  for (const auto& [target, message] : others) {
    auto refused = requireInterface("link_flap", target);
    ASSERT_FALSE(refused.isOk());
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.status().message(), message);
  }
}

}  // namespace
}  // namespace fabric_chaos::injectors
