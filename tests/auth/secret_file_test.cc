// writeSecretFile / readSecretFile on a real temporary directory (no root needed).

#include "server/auth/secret_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fabric_chaos::auth {
namespace {

namespace fs = std::filesystem;
using core::StatusCode;

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "fc_secret_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static mode_t modeOf(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  static std::string contents(const std::string& path) {
    std::ifstream in(path);
    std::stringstream out;
    out << in.rdbuf();
    return out.str();
  }
  size_t entries() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++n;
    return n;
  }

  std::string dir_;
};

TEST_F(SecretFileTest, CreatesANewFileReadableOnlyByItsOwner) {
  const std::string path = dir_ + "/admin.token";
  // A permissive umask must not widen the mode.
  const mode_t old_umask = ::umask(0);
  core::Status s = writeSecretFile(path, "fct_abc");
  ::umask(old_umask);
  ASSERT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(modeOf(path), 0600);
  EXPECT_EQ(contents(path), "fct_abc\n");
  auto read = readSecretFile(path);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ(*read, "fct_abc");
}

TEST_F(SecretFileTest, ReplacesAnExistingFileAtomicallyAndTightensItsMode) {
  const std::string path = dir_ + "/admin.token";
  std::ofstream(path) << "old secret, longer than the new one\n";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_TRUE(writeSecretFile(path, "fct_new").isOk());
  EXPECT_EQ(modeOf(path), 0600);
  EXPECT_EQ(contents(path), "fct_new\n");
  EXPECT_EQ(entries(), 1u) << "the temporary file was left behind";
}

TEST_F(SecretFileTest, ReplacesASymlinkInsteadOfWritingThroughIt) {
  const std::string target = dir_ + "/elsewhere";
  std::ofstream(target) << "keep me\n";
  const std::string path = dir_ + "/admin.token";
  fs::create_symlink(target, path);
  ASSERT_TRUE(writeSecretFile(path, "fct_x").isOk());
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(contents(path), "fct_x\n");
  EXPECT_EQ(contents(target), "keep me\n");
}

TEST_F(SecretFileTest, FailuresNameThePath) {
  const std::string path = dir_ + "/no-such-dir/admin.token";
  core::Status s = writeSecretFile(path, "fct_x");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();

  auto read = readSecretFile(dir_ + "/missing");
  EXPECT_EQ(read.status().code(), StatusCode::kNotFound);
  EXPECT_NE(read.status().message().find("missing"), std::string::npos);
}

TEST_F(SecretFileTest, ReadTakesTheFirstLineTrimmed) {
  const std::string path = dir_ + "/t";
  std::ofstream(path) << "  fct_abc \r\nsecond line\n";
  auto read = readSecretFile(path);
  ASSERT_TRUE(read.isOk());
  EXPECT_EQ(*read, "fct_abc");
}

}  // namespace
}  // namespace fabric_chaos::auth
