// The IB lab's fat tree: what cannot be built is refused in one sentence before anything starts,
// and the ibsim net file cables every leaf to every spine and each HCA to its leaf.

#include "ib/fat_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace fabric_chaos::ib {
namespace {

TEST(FatTree, ShapesThatCannotBeBuiltAreRefusedSayingWhy) {
  struct Case {
    FatTreeShape shape;
    const char* says;
  };
  for (const Case& c :
       {Case{{2, 0, 2, 36}, "at least one spine"}, Case{{0, 2, 2, 36}, "at least one leaf"},
        Case{{2, 2, 0, 36}, "--hosts-per-leaf must be at least 1"},
        Case{{2, 4, 34, 36}, "a leaf needs 38 ports (34 hosts and 4 uplinks)"},
        Case{{40, 2, 2, 36}, "a spine needs a port per leaf (40)"},
        Case{{2, 2, 2, 300}, "between 2 and 254"}}) {
    const core::Status s = checkFatTree(c.shape);
    ASSERT_FALSE(s.isOk()) << c.says;
    EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.message();
  }
  EXPECT_TRUE(checkFatTree({4, 2, 4, 36}).isOk());
  EXPECT_TRUE(checkFatTree({2, 2, 34, 36}).isOk()) << "34 hosts and 2 uplinks fill 36 ports";
}

TEST(FatTree, TheNetFileCablesEveryLeafToEverySpineAndEachHcaToItsLeaf) {
  const FatTreeShape shape{2, 2, 2, 8};
  const std::string net = ibsimNetFile(shape);
  // h0 first: ibsim's default attachment point.
  EXPECT_EQ(net.find("Hca 1 \"h0\"\n[1] \"l0\"[1]\n"), net.find("Hca"));
  EXPECT_NE(net.find("Hca 1 \"h3\"\n[1] \"l1\"[2]\n"), std::string::npos);
  EXPECT_NE(net.find("Switch 8 \"s1\"\n[1] \"l0\"[4]\n[2] \"l1\"[4]\n"), std::string::npos) << net;
  EXPECT_NE(
      net.find("Switch 8 \"l1\"\n[1] \"h2\"[1]\n[2] \"h3\"[1]\n[3] \"s0\"[2]\n[4] \"s1\"[2]\n"),
      std::string::npos)
      << net;
  EXPECT_EQ(leafUplinkPort(shape, 1), 4);
  EXPECT_EQ(spineDownPort(1), 2);
}

}  // namespace
}  // namespace fabric_chaos::ib
