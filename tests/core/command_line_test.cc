#include "core/command_line.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fabric_chaos::core {
namespace {

FlagRules rules(bool positional = false) {
  FlagRules r{{"name", "count"}, {"verbose", "help"}};
  r.positional = positional;
  return r;
}

// "name=value" per flag, in order, so a whole parse compares as one vector.
std::vector<std::string> flagsOf(const CommandLine& line) {
  std::vector<std::string> out;
  for (const ParsedFlag& f : line.flags) out.push_back(f.name + "=" + f.value);
  return out;
}

using Words = std::vector<std::string>;

TEST(CommandLine, BothValueFormsAndBooleans) {
  auto line =
      parseCommandLine({"--name", "a", "--count=3", "--verbose", "--name=", "--help"}, rules());
  ASSERT_TRUE(line.isOk()) << line.status().toString();
  EXPECT_EQ(flagsOf(*line), (Words{"name=a", "count=3", "verbose=true", "name=", "help=true"}));
  EXPECT_TRUE(line->positional.empty());
}

TEST(CommandLine, AValuedFlagTakesTheNextWordWhateverItLooksLike) {
  auto line = parseCommandLine({"--name", "--verbose", "--count", "-h", "--name", "--"}, rules());
  ASSERT_TRUE(line.isOk()) << line.status().toString();
  EXPECT_EQ(flagsOf(*line), (Words{"name=--verbose", "count=-h", "name=--"}));
}

TEST(CommandLine, OnlyTheFirstEqualsSplits) {
  auto line = parseCommandLine({"--name=a=b"}, rules());
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(flagsOf(*line), (Words{"name=a=b"}));
}

TEST(CommandLine, RepeatsAreKeptInOrder) {
  auto line = parseCommandLine({"--name", "x", "--verbose", "--name=y", "--verbose"}, rules());
  ASSERT_TRUE(line.isOk());
  EXPECT_EQ(flagsOf(*line), (Words{"name=x", "verbose=true", "name=y", "verbose=true"}));
}

TEST(CommandLine, PositionalsWhenAllowed) {
  auto line = parseCommandLine({"up", "--count", "2", "now", "--", "-h"}, rules(true));
  ASSERT_TRUE(line.isOk()) << line.status().toString();
  EXPECT_EQ(flagsOf(*line), (Words{"count=2"}));
  EXPECT_EQ(line->positional, (Words{"up", "now", "--", "-h"}));
}

TEST(CommandLine, EmptyIsFine) {
  auto line = parseCommandLine({}, rules());
  ASSERT_TRUE(line.isOk());
  EXPECT_TRUE(line->flags.empty());
  EXPECT_TRUE(line->positional.empty());
}

struct BadCase {
  Words args;
  bool positional;
  std::string message;  // all of it
};

TEST(CommandLine, TheFirstProblemIsTheMessage) {
  const std::vector<BadCase> cases = {
      {{"--bogus"}, false, "unknown option --bogus"},
      {{"--bogus=1"}, true, "unknown option --bogus"},
      {{"--verbose", "--bogus", "x", "stray"}, false, "unknown option --bogus"},
      {{"--=x"}, false, "unknown option --"},
      {{"--name"}, false, "--name needs a value"},
      {{"--verbose", "--count"}, true, "--count needs a value"},
      {{"--verbose=yes"}, false, "--verbose takes no value"},
      {{"--verbose="}, false, "--verbose takes no value"},
      {{"stray"}, false, "unexpected argument \"stray\""},
      {{"--name", "a", "-h"}, false, "unexpected argument \"-h\""},
      {{"--"}, false, "unexpected argument \"--\""},
      {{""}, false, "unexpected argument \"\""},
      {{"stray", "--bogus"}, false, "unexpected argument \"stray\""},
  };
  for (const BadCase& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    auto line = parseCommandLine(c.args, rules(c.positional));
    ASSERT_FALSE(line.isOk()) << joined;
    EXPECT_EQ(line.status().code(), StatusCode::kInvalidArgument) << joined;
    EXPECT_EQ(line.status().message(), c.message) << joined;
  }
}

TEST(CommandLine, ArgsFromArgvStartAtFirstAndStopAtANull) {
  std::string words[] = {"cmd", "--name", "a"};
  char* argv[] = {words[0].data(), words[1].data(), words[2].data(), nullptr};
  EXPECT_EQ(commandLineArgs(3, argv, 1), (Words{"--name", "a"}));
  EXPECT_EQ(commandLineArgs(3, argv, 0), (Words{"cmd", "--name", "a"}));
  EXPECT_EQ(commandLineArgs(4, argv, 0), (Words{"cmd", "--name", "a"}));
  EXPECT_TRUE(commandLineArgs(1, argv, 1).empty());
  char* early[] = {words[0].data(), nullptr, words[2].data()};
  EXPECT_EQ(commandLineArgs(3, early, 0), (Words{"cmd"}));
}

struct IntCase {
  std::string text;
  int64_t min;
  int64_t max;
  int64_t value;        // when message is empty
  std::string message;  // "" = accepted
};

TEST(FlagInteger, ParsesAllOfTheTextWithinTheRange) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const std::vector<IntCase> cases = {
      {"0", 0, 10, 0, ""},
      {"10", 0, 10, 10, ""},
      {"007", 0, 10, 7, ""},
      {"-5", -10, 10, -5, ""},
      {"9223372036854775807", kMin, kMax, kMax, ""},
      {"-9223372036854775808", kMin, kMax, kMin, ""},
      {"", 0, 10, 0, "--n expects an integer, got \"\""},
      {"+5", 0, 10, 0, "--n expects an integer, got \"+5\""},
      {"-", 0, 10, 0, "--n expects an integer, got \"-\""},
      {" 5", 0, 10, 0, "--n expects an integer, got \" 5\""},
      {"5 ", 0, 10, 0, "--n expects an integer, got \"5 \""},
      {"1x", 0, 10, 0, "--n expects an integer, got \"1x\""},
      {"1.5", 0, 10, 0, "--n expects an integer, got \"1.5\""},
      {"0x10", 0, 100, 0, "--n expects an integer, got \"0x10\""},
      {"11", 0, 10, 0, "--n must be between 0 and 10, got 11"},
      {"-1", 0, 10, 0, "--n must be between 0 and 10, got -1"},
      {"9223372036854775808", kMin, kMax, 0,
       "--n must be between -9223372036854775808 and 9223372036854775807, got "
       "9223372036854775808"},
      {"-99999999999999999999", 0, 10, 0,
       "--n must be between 0 and 10, got -99999999999999999999"},
      {"99999999999999999999x", 0, 10, 0, "--n expects an integer, got \"99999999999999999999x\""},
  };
  for (const IntCase& c : cases) {
    auto n = parseFlagInteger("--n", c.text, c.min, c.max);
    if (c.message.empty()) {
      ASSERT_TRUE(n.isOk()) << c.text << ": " << n.status().toString();
      EXPECT_EQ(*n, c.value) << c.text;
    } else {
      ASSERT_FALSE(n.isOk()) << c.text;
      EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument) << c.text;
      EXPECT_EQ(n.status().message(), c.message) << c.text;
    }
  }
}

TEST(CommaList, ItemsAreTrimmedAndEmptyOnesDropped) {
  EXPECT_EQ(splitCommaList(" p0, p1 ,,\tup0 ,"), (std::vector<std::string>{"p0", "p1", "up0"}));
  EXPECT_TRUE(splitCommaList("").empty());
  EXPECT_TRUE(splitCommaList(" , ,").empty());
  EXPECT_EQ(splitCommaList("a"), std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace fabric_chaos::core
