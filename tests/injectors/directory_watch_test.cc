// sys::DirectoryWatch on a real directory (inotify needs no privileges): every kind of change to
// an entry is reported once the queue is drained, quiet polls say kNone, and the directory
// going, a missing directory and use from a forked child are all told apart.

#include "injectors/sys/directory_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace fabric_chaos::sys {
namespace {

namespace fs = std::filesystem;

class DirectoryWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fc-watch-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<DirectoryWatch> watch() {
    auto started = watchDirectory(dir_.string());
    EXPECT_TRUE(started.isOk()) << started.status().toString();
    return started.isOk() ? std::move(started.value()) : nullptr;
  }
  fs::path dir_;
};

TEST_F(DirectoryWatchTest, ReportsEveryKindOfEntryChangeAndNothingElse) {
  auto watcher = watch();
  ASSERT_NE(watcher, nullptr);
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kNone);

  std::ofstream(dir_ / "a.json") << "{}";
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome) << "created";
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kNone) << "one answer per burst";

  {
    // Written in place: the directory's own mtime does not move, the watch must still tell.
    std::fstream in_place(dir_ / "a.json", std::ios::in | std::ios::out);
    in_place << "[]";
  }
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome) << "written in place";

  fs::last_write_time(dir_ / "a.json", fs::file_time_type::clock::now() - std::chrono::hours(1));
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome) << "attributes touched";

  fs::rename(dir_ / "a.json", dir_ / "b.json");
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome) << "renamed";
  fs::remove(dir_ / "b.json");
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome) << "removed";
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kNone);

  // Reading a file is not a change.
  std::ofstream(dir_ / "c.json") << "{}";
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome);
  std::string text;
  std::ifstream(dir_ / "c.json") >> text;
  EXPECT_EQ(text, "{}");
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kNone);
}

TEST_F(DirectoryWatchTest, TheDirectoryGoingEndsTheWatch) {
  auto removed = watch();
  ASSERT_NE(removed, nullptr);
  fs::remove_all(dir_);
  EXPECT_EQ(removed->poll(), DirectoryChanges::kWatchLost);
  EXPECT_EQ(removed->poll(), DirectoryChanges::kWatchLost) << "and it stays lost";
  EXPECT_EQ(watchDirectory(dir_.string()).status().code(), core::StatusCode::kNotFound);

  fs::create_directories(dir_);
  auto renamed = watch();
  ASSERT_NE(renamed, nullptr);
  const fs::path elsewhere = dir_.string() + "-moved";
  fs::rename(dir_, elsewhere);
  EXPECT_EQ(renamed->poll(), DirectoryChanges::kWatchLost);
  fs::remove_all(elsewhere);

  std::ofstream(dir_.string() + "-file") << "x";
  EXPECT_EQ(watchDirectory(dir_.string() + "-file").status().code(), core::StatusCode::kNotFound)
      << "a file is not a directory";
  fs::remove(dir_.string() + "-file");
}

TEST_F(DirectoryWatchTest, AForkedChildNeverTakesTheParentsEvents) {
  auto watcher = watch();
  ASSERT_NE(watcher, nullptr);
  std::ofstream(dir_ / "a.json") << "{}";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(watcher->poll() == DirectoryChanges::kWatchLost ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child must see kWatchLost";
  EXPECT_EQ(watcher->poll(), DirectoryChanges::kSome) << "the event is still the parent's";
}

}  // namespace
}  // namespace fabric_chaos::sys
