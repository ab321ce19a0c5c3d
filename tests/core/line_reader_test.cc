// LineReader on a real pipe: lines split across reads, several in one read, the unfinished last
// line at end of file, and nothing delivered for a read that would block.

#include "core/line_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace fabric_chaos::core {
namespace {

class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe2(fds_, O_NONBLOCK), 0); }
  ~Pipe() {
    closeWriter();
    ::close(fds_[0]);
  }
  int reader() const { return fds_[0]; }
  void write(const std::string& text) {
    ASSERT_EQ(::write(fds_[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void closeWriter() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(LineReaderTest, WholeLinesWhateverTheReadsDeliver) {
  Pipe pipe;
  LineReader reader;
  std::vector<std::string> lines;
  const auto collect = [&](const std::string& line) { lines.push_back(line); };
  EXPECT_FALSE(reader.readFrom(pipe.reader(), collect)) << "an empty pipe is not its end";
  EXPECT_TRUE(lines.empty());
  pipe.write("one\ntw");
  EXPECT_FALSE(reader.readFrom(pipe.reader(), collect));
  EXPECT_EQ(lines, std::vector<std::string>{"one"});
  pipe.write("o\n\nthree\nfour");
  EXPECT_FALSE(reader.readFrom(pipe.reader(), collect));
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "", "three"}));
  pipe.closeWriter();
  EXPECT_TRUE(reader.readFrom(pipe.reader(), collect));
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two", "", "three", "four"}));
}

TEST(LineReaderTest, AnEndAfterAWholeLineAddsNothing) {
  Pipe pipe;
  LineReader reader;
  std::vector<std::string> lines;
  pipe.write("last\n");
  pipe.closeWriter();
  const auto collect = [&](const std::string& line) { lines.push_back(line); };
  while (!reader.readFrom(pipe.reader(), collect)) {
  }
  EXPECT_EQ(lines, std::vector<std::string>{"last"});
  EXPECT_TRUE(reader.readFrom(-1, collect)) << "a read error ends it too";
}

}  // namespace
}  // namespace fabric_chaos::core
