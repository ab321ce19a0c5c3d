// /proc/PID/stat parsing (state and start time after the command name, which may hold spaces and
// parentheses) and processAlive on real processes: this one, a zombie child, a reaped pid.

#include "injectors/sys/proc_stat.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace fabric_chaos::sys {
namespace {

// 52 fields as the kernel writes them; fields 3 and 22 vary.
std::string statLine(const std::string& comm, char state, const std::string& start_time) {
  std::string line = "4242 (" + comm + ") ";
  line += state;
  for (int field = 4; field <= 52; ++field) {
    line += " " + (field == 22 ? start_time : std::to_string(field * 10));
  }
  return line + "\n";
}

TEST(ProcStatTest, ReadsStateAndStartTimeAfterTheLastParenthesis) {
  const auto plain = parseProcessStat(statLine("sleep", 'S', "123456"));
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->state, 'S');
  EXPECT_EQ(plain->start_time, 123456u);
  EXPECT_FALSE(plain->zombie());

  // A name that imitates the fields that follow it must not shift them.
  const auto tricky = parseProcessStat(statLine("a) R 1 2 (b", 'Z', "987"));
  ASSERT_TRUE(tricky.has_value());
  EXPECT_EQ(tricky->state, 'Z');
  EXPECT_EQ(tricky->start_time, 987u);
  EXPECT_TRUE(tricky->zombie());
  EXPECT_TRUE(parseProcessStat(statLine("x", 'X', "1"))->zombie());
}

TEST(ProcStatTest, RefusesLinesItCannotRead) {
  EXPECT_FALSE(parseProcessStat("").has_value());
  EXPECT_FALSE(parseProcessStat("4242 sleep S 1 2 3").has_value()) << "no command name";
  EXPECT_FALSE(parseProcessStat("4242 (sleep) S 1 2 3 4\n").has_value()) << "too short";
  EXPECT_FALSE(parseProcessStat(statLine("sleep", 'S', "12x")).has_value()) << "not a number";
}

TEST(ProcStatTest, SeesThisProcessAZombieAndAReapedPid) {
  const auto self = readProcessStat(::getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->state, 'R');
  EXPECT_EQ(processStartTime(::getpid()), self->start_time);
  EXPECT_TRUE(processAlive(::getpid()));

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Not reaped yet: kill(child, 0) still succeeds, but it holds nothing any more.
  bool zombie = false;
  for (int i = 0; i < 500 && !zombie; ++i) {
    const auto stat = readProcessStat(child);
    zombie = stat && stat->zombie();
    if (!zombie) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(zombie) << "the child never became a zombie";
  EXPECT_FALSE(processAlive(child));
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(readProcessStat(child).has_value());
  EXPECT_FALSE(processStartTime(child).has_value());
  EXPECT_FALSE(processAlive(child));
  EXPECT_FALSE(processAlive(0));
  EXPECT_FALSE(processAlive(-1));
}

}  // namespace
}  // namespace fabric_chaos::sys
