// GET /v1/fabrics/{name} on a real namespace lab (`fabric-chaos serve --with-lab 2`): the embedded
// agent answers for every host, and the netdevs it lists for the switch namespace (read through
// rtnetlink) match what an independent observer, `ip -n fcl-sw0 -j link`, says: the same names,
// MACs and operational states. Also the kinds it reports agree with /v1/capabilities.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr const char* kSwitchNs = "fcl-sw0";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

class FabricAgentsE2e : public ServeWithLabTest {
 protected:
  FabricAgentsE2e() : ServeWithLabTest(2) {}
};

TEST_F(FabricAgentsE2e, TheSwitchNetdevsMatchIpLink) {
  auto reply = httpRequest(port_, "GET", "/v1/fabrics/netns-lab");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json fabric = reply.json();
  ASSERT_EQ(fabric["hosts"].size(), 2u) << reply.body;
  for (const json& host : fabric["hosts"]) {
    const json& agent = host["agent"];
    ASSERT_TRUE(agent.is_object()) << host.dump();
    EXPECT_EQ(agent["name"], "local");
    EXPECT_EQ(agent["reachable"], true) << agent.dump();
    EXPECT_FALSE(agent["version"].get<std::string>().empty());
    // The same process and clock: well under a second apart.
    EXPECT_LT(std::abs(agent["clock_offset_ms"].get<double>()), 1000.0) << agent.dump();
  }
  const json& agent = fabric["hosts"][0]["agent"];

  // What the agent says about the switch namespace.
  std::map<std::string, json> reported;
  for (const json& dev : agent["netdevs"]) {
    if (dev["netns"] == kSwitchNs) reported[dev["name"].get<std::string>()] = dev;
  }
  // What ip says.
  auto ip = runShell(std::string("ip -n ") + kSwitchNs + " -j link show");
  ASSERT_EQ(ip.exit_code, 0) << ip.out;
  const json links = json::parse(ip.out, nullptr, false);
  ASSERT_TRUE(links.is_array()) << ip.out;
  ASSERT_GE(links.size(), 4u) << "lo, br0, p0, p1 at least: " << ip.out;
  EXPECT_EQ(reported.size(), links.size()) << ip.out << "\n" << agent["netdevs"].dump();
  for (const json& link : links) {
    const std::string name = link["ifname"].get<std::string>();
    auto it = reported.find(name);
    ASSERT_NE(it, reported.end()) << name << " is missing from " << agent["netdevs"].dump();
    EXPECT_EQ(it->second["mac"], link.value("address", "")) << name;
    EXPECT_EQ(it->second["operstate"], lower(link.value("operstate", ""))) << name;
  }
  for (const char* port : {"p0", "p1", "br0"}) EXPECT_EQ(reported.count(port), 1u) << port;

  // The host namespaces are reported too: each host's eth0.
  for (const char* netns : {"fcl-h0", "fcl-h1"}) {
    const auto& devs = agent["netdevs"];
    EXPECT_TRUE(std::any_of(
        devs.begin(), devs.end(),
        [&](const json& dev) { return dev["netns"] == netns && dev["name"] == "eth0"; }))
        << netns << ": " << devs.dump();
  }

  // Its kinds are this kernel's, as /v1/capabilities says.
  auto caps = httpRequest(port_, "GET", "/v1/capabilities").json();
  std::map<std::string, bool> available;
  for (const json& kind : caps["fault_kinds"]) available[kind["kind"]] = kind["available"];
  ASSERT_EQ(agent["kinds"].size(), available.size());
  for (const json& kind : agent["kinds"]) {
    EXPECT_EQ(kind["available"], available[kind["kind"].get<std::string>()]) << kind.dump();
  }

  // The list stays the plain topology.
  auto list = httpRequest(port_, "GET", "/v1/fabrics").json();
  EXPECT_TRUE(list["fabrics"][0]["hosts"][0]["agent"].is_string()) << list.dump();
}

}  // namespace
}  // namespace fabric_chaos::testing
