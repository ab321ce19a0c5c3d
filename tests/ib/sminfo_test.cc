// sminfo's reply line, as infiniband-diags 44 prints it against OpenSM 3.3.23 in ibsim.

#include "ib/sminfo.h"

#include <gtest/gtest.h>

namespace fabric_chaos::ib {
namespace {

TEST(Sminfo, ReadsAMasterAndAStandby) {
  auto master = parseSminfo(
      "sminfo: sm lid 1 sm guid 0x100001, activity count 66 priority 14 state 3 SMINFO_MASTER\n");
  ASSERT_TRUE(master.isOk()) << master.status().toString();
  EXPECT_EQ(master->lid, 1);
  EXPECT_EQ(master->guid, 0x100001u);
  EXPECT_EQ(master->activity, 66u);
  EXPECT_EQ(master->priority, 14);
  EXPECT_EQ(master->state, SmState::kMaster);
  auto standby = parseSminfo(
      "sminfo: sm lid 3 sm guid 0x2c903000a1b2c, activity count 118 priority 13 state 2 "
      "SMINFO_STANDBY");
  ASSERT_TRUE(standby.isOk());
  EXPECT_EQ(standby->guid, 0x2c903000a1b2cu);
  EXPECT_EQ(standby->state, SmState::kStandby);
  EXPECT_STREQ(describe(standby->state), "standby");
  EXPECT_STREQ(describe(SmState::kDiscovering), "discovering");
}

TEST(Sminfo, FindsTheReplyAfterOtherOutput) {
  auto reply = parseSminfo(
      "ibwarn: [123] some warning\nsminfo: sm lid 7 sm guid 0x7, activity count 0 priority 0 "
      "state 1 SMINFO_DISCOVERING\n");
  ASSERT_TRUE(reply.isOk());
  EXPECT_EQ(reply->state, SmState::kDiscovering);
}

TEST(Sminfo, RefusesWhatIsNotAReply) {
  for (const char* text :
       {"", "sminfo: iberror: failed: query\n",
        "sminfo: sm lid 1 sm guid zz, activity count 1 priority 1 state 3",
        "sminfo: sm lid 1 sm guid 0x1, activity count 1 priority 16 state 3",
        "sminfo: sm lid 1 sm guid 0x1, activity count 1 priority 1 state 4",
        "sminfo: sm lid 70000 sm guid 0x1, activity count 1 priority 1 state 3"}) {
    auto reply = parseSminfo(text);
    ASSERT_FALSE(reply.isOk()) << text;
    EXPECT_EQ(reply.status().code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(reply.status().message().find("not an sminfo reply"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabric_chaos::ib
