// `fabric-chaos fabric import --ibnetdiscover FILE`, the real binary (FC_BINARY, set by ctest):
// the fixture's subnet as JSON on stdout and a summary on stderr; a file it cannot parse exits 1
// naming the line, bad usage 2.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/privileged/support.h"

namespace fabric_chaos::ib {
namespace {

using testing::runShell;

class FabricImportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* binary = std::getenv("FC_BINARY");
    ASSERT_NE(binary, nullptr) << "FC_BINARY is not set (ctest sets it)";
    binary_ = binary;
    dir_ = testing::makeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string binary_;
  std::string dir_;
};

TEST_F(FabricImportCli, PrintsTheSubnetAsJsonAndASummary) {
  const std::string fixture = std::string(FC_IB_FIXTURES) + "/ibnetdiscover-fat-tree-2x1x2.txt";
  const auto out =
      runShell(binary_ + " fabric import --ibnetdiscover " + fixture + " 2>" + dir_ + "/err");
  ASSERT_EQ(out.exit_code, 0) << out.out << testing::readFile(dir_ + "/err");
  const nlohmann::json j = nlohmann::json::parse(out.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out.out;
  EXPECT_EQ(j["nodes"].size(), 7u);
  EXPECT_EQ(j["links"].size(), 6u);
  EXPECT_EQ(testing::readFile(dir_ + "/err"),
            "fabric-chaos fabric import: 7 nodes (4 hca, 2 leaf, 1 spine), 6 links\n");
  // From standard input, into a file.
  const auto piped = runShell("cat " + fixture + " | " + binary_ +
                              " fabric import --ibnetdiscover - --out " + dir_ + "/subnet.json");
  ASSERT_EQ(piped.exit_code, 0) << piped.out;
  EXPECT_EQ(nlohmann::json::parse(testing::readFile(dir_ + "/subnet.json"), nullptr, false), j);
}

TEST_F(FabricImportCli, UnreadableInputExitsOneNamingTheLineAndBadUsageTwo) {
  std::ofstream(dir_ + "/broken.txt") << "vendid=0x0\nSwitch 8 no-quotes\n";
  auto out = runShell(binary_ + " fabric import --ibnetdiscover " + dir_ + "/broken.txt 2>&1");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.out.find("broken.txt: line 2: unreadable node line"), std::string::npos) << out.out;
  out = runShell(binary_ + " fabric import --ibnetdiscover " + dir_ + "/missing.txt 2>&1");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.out.find("missing.txt"), std::string::npos) << out.out;
  out = runShell(binary_ + " fabric import 2>&1");
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.out.find("fabric import --ibnetdiscover FILE"), std::string::npos) << out.out;
  out = runShell(binary_ + " fabric export --ibnetdiscover x 2>&1");
  EXPECT_EQ(out.exit_code, 2) << out.out;
}

}  // namespace
}  // namespace fabric_chaos::ib
