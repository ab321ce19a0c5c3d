// `fabric-chaos ib-port`'s logic against a fake direct-route subnet: which switch port a name
// means, which route the Set takes (never one entering the switch by the port it disables), the
// states before and after, and what it refuses. Pure: no MAD leaves the process.

#include "workload/ib_port_state.h"

#include <gtest/gtest.h>

#include "tests/workload/fake_ib_subnet.h"

namespace fabric_chaos::workload {
namespace {

using testing::FakeIbSubnet;

TEST(IbPortState, DisablesASpinePortByARouteThatDoesNotEnterThroughItAndEnablesItAgain) {
  FakeIbSubnet subnet("h3");
  // From h3 the discovery reaches l0 first through s0, entering l0 by port 3.
  auto disabled = actOnPort(subnet, subnet, "l0", 3, IbPortAction::kDisable, 20);
  ASSERT_TRUE(disabled.isOk()) << disabled.status().message();
  EXPECT_EQ(disabled->switch_name, "l0");
  EXPECT_EQ(disabled->switch_guid, 0x200002u);
  EXPECT_EQ(disabled->port, 3);
  EXPECT_EQ(disabled->route, (DirectRoute{1, 4, 1}));  // through s1, entering l0 by port 4
  EXPECT_EQ(disabled->before, IbPhysicalState::kLinkUp);
  EXPECT_EQ(disabled->after, IbPhysicalState::kDisabled);
  EXPECT_EQ(subnet.sets, (std::vector<std::string>{"l0[3] disabled"}));
  EXPECT_EQ(toJson(*disabled), (nlohmann::json{{"switch", "l0"},
                                               {"guid", "0x0000000000200002"},
                                               {"port", 3},
                                               {"route", "0,1,4,1"},
                                               {"before", "link-up"},
                                               {"after", "disabled"}}));
  // The cable is down on both ends: s0 port 1 no longer leads anywhere.
  EXPECT_FALSE(subnet.nodeInfo({1, 3, 1}, 20).isOk());

  auto enabled = actOnPort(subnet, subnet, "l0", 3, IbPortAction::kEnable, 20);
  ASSERT_TRUE(enabled.isOk()) << enabled.status().message();
  EXPECT_EQ(enabled->before, IbPhysicalState::kDisabled);
  EXPECT_EQ(enabled->after, IbPhysicalState::kPolling);
  EXPECT_TRUE(subnet.nodeInfo({1, 3, 1}, 20).isOk());
}

TEST(IbPortState, AChannelAdapterMeansItsSwitchsEndAndAQueryChangesNothing) {
  FakeIbSubnet subnet("h3");
  auto h0 = actOnPort(subnet, subnet, "h0", 1, IbPortAction::kQuery, 20);
  ASSERT_TRUE(h0.isOk()) << h0.status().message();
  EXPECT_EQ(h0->switch_name, "l0");
  EXPECT_EQ(h0->port, 1);
  EXPECT_EQ(h0->before, h0->after);
  EXPECT_TRUE(subnet.sets.empty());
}

TEST(IbPortState, RefusesItsOwnCableAndNamesNobodyItCannotFind) {
  FakeIbSubnet subnet("h3");
  auto own = actOnPort(subnet, subnet, "h3", 1, IbPortAction::kDisable, 20);
  ASSERT_FALSE(own.isOk());
  EXPECT_EQ(own.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(own.status().message().find("l1 port 2 is the cable of the node sending the MADs"),
            std::string::npos)
      << own.status().message();
  auto own_switch_end = actOnPort(subnet, subnet, "l1", 2, IbPortAction::kDisable, 20);
  EXPECT_EQ(own_switch_end.status().code(), core::StatusCode::kFailedPrecondition);
  // Querying one's own cable is harmless.
  EXPECT_TRUE(actOnPort(subnet, subnet, "h3", 1, IbPortAction::kQuery, 20).isOk());

  auto nobody = actOnPort(subnet, subnet, "x9", 1, IbPortAction::kDisable, 20);
  EXPECT_EQ(nobody.status().code(), core::StatusCode::kNotFound);
  EXPECT_NE(nobody.status().message().find("no switch or channel adapter named \"x9\""),
            std::string::npos);
  EXPECT_TRUE(subnet.sets.empty());
}

}  // namespace
}  // namespace fabric_chaos::workload
