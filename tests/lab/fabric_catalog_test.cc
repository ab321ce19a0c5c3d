// DirectoryFabricCatalog: every call sees the directory as it is now (new, changed, replaced and
// removed files), while unchanged files are served from the cache.

#include "lab/fabric_catalog.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fabric_chaos::lab {
namespace {

namespace fs = std::filesystem;

scenarios::Fabric fabricNamed(const std::string& name, const std::string& host) {
  scenarios::Fabric fabric;
  fabric.name = name;
  fabric.kind = "netns";
  fabric.hosts.push_back(
      scenarios::Host{host, "fcl-" + host, "local", {{"eth0", "10.0.0.1"}}, {}, ""});
  return fabric;
}

class FabricCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fc-catalog-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "fabrics");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& file, const std::string& text) {
    std::ofstream(dir_ / "fabrics" / file) << text;
  }
  fs::path dir_;
};

TEST_F(FabricCatalogTest, SeesNewChangedReplacedAndRemovedFiles) {
  DirectoryFabricCatalog catalog(dir_.string());
  EXPECT_TRUE(catalog.list().empty());

  write("a.json", scenarios::toJson(fabricNamed("a", "h0")).dump());
  write("broken.json", "{not json");
  write("notes.txt", "ignored");
  auto fabrics = catalog.list();
  ASSERT_EQ(fabrics.size(), 1u);
  EXPECT_EQ(fabrics[0].hosts[0].name, "h0");
  EXPECT_EQ(catalog.list()[0].hosts[0].name, "h0") << "served again, unchanged";

  // Rewritten in place with a longer host name: another size.
  write("a.json", scenarios::toJson(fabricNamed("a", "host-zero")).dump());
  ASSERT_EQ(catalog.list().size(), 1u);
  EXPECT_EQ(catalog.list()[0].hosts[0].name, "host-zero");

  // Replaced by rename with a document of the same size: another inode.
  write("tmp", scenarios::toJson(fabricNamed("a", "host-0ne")).dump());
  fs::rename(dir_ / "fabrics" / "tmp", dir_ / "fabrics" / "a.json");
  ASSERT_EQ(catalog.list().size(), 1u);
  EXPECT_EQ(catalog.list()[0].hosts[0].name, "host-0ne");

  // A broken file that becomes valid is picked up.
  write("broken.json", scenarios::toJson(fabricNamed("b", "h9")).dump());
  fabrics = catalog.list();
  ASSERT_EQ(fabrics.size(), 2u);
  EXPECT_EQ(fabrics[1].name, "b");
  ASSERT_TRUE(catalog.get("b").isOk());

  fs::remove(dir_ / "fabrics" / "a.json");
  fabrics = catalog.list();
  ASSERT_EQ(fabrics.size(), 1u);
  EXPECT_EQ(fabrics[0].name, "b");
  EXPECT_EQ(catalog.get("a").status().code(), core::StatusCode::kNotFound);
}

TEST_F(FabricCatalogTest, VersionMovesExactlyWhenAFabricFileAppearsChangesOrGoes) {
  DirectoryFabricCatalog catalog(dir_.string());
  const auto empty = catalog.version();
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(catalog.version(), empty) << "nothing changed";

  write("a.json", scenarios::toJson(fabricNamed("a", "h0")).dump());
  const auto added = catalog.version();
  EXPECT_NE(added, empty);
  write("notes.txt", "not a fabric file");
  EXPECT_EQ(catalog.version(), added) << "only *.json files count";

  write("a.json", scenarios::toJson(fabricNamed("a", "host-zero")).dump());
  const auto changed = catalog.version();
  EXPECT_NE(changed, added);
  EXPECT_EQ(catalog.version(), changed);

  fs::remove(dir_ / "fabrics" / "a.json");
  EXPECT_NE(catalog.version(), changed);
  EXPECT_TRUE(catalog.list().empty());
}

TEST_F(FabricCatalogTest, VersionSeesInPlaceWritesAndADirectoryThatComesGoesAndComesBack) {
  fs::remove_all(dir_ / "fabrics");
  DirectoryFabricCatalog catalog(dir_.string());
  const auto none = catalog.version();
  EXPECT_EQ(catalog.version(), none) << "no directory yet, and nothing changed";

  fs::create_directories(dir_ / "fabrics");
  write("a.json", scenarios::toJson(fabricNamed("a", "h0")).dump());
  const auto created = catalog.version();
  EXPECT_NE(created, none) << "the directory and a file appeared after the first ask";
  EXPECT_EQ(catalog.version(), created);

  {
    // In place: same inode, and the directory's own mtime does not move.
    const auto before = fs::last_write_time(dir_ / "fabrics");
    std::fstream in_place(dir_ / "fabrics" / "a.json", std::ios::in | std::ios::out);
    in_place << scenarios::toJson(fabricNamed("a", "h1")).dump();
    in_place.close();
    ASSERT_EQ(fs::last_write_time(dir_ / "fabrics"), before);
  }
  const auto rewritten = catalog.version();
  EXPECT_NE(rewritten, created) << "a file written in place";
  EXPECT_EQ(catalog.list().at(0).hosts.at(0).name, "h1");

  fs::remove_all(dir_ / "fabrics");
  const auto gone = catalog.version();
  EXPECT_NE(gone, rewritten) << "the directory went";
  fs::create_directories(dir_ / "fabrics");
  write("b.json", scenarios::toJson(fabricNamed("b", "h2")).dump());
  const auto back = catalog.version();
  EXPECT_NE(back, gone) << "a new directory of the same name is watched again";
  write("c.json", scenarios::toJson(fabricNamed("c", "h3")).dump());
  EXPECT_NE(catalog.version(), back) << "and changes inside it are seen";
}

}  // namespace
}  // namespace fabric_chaos::lab
