// Step parsers (workload/steps/step_parser.h): JSON lines and PCRE2 patterns, table-driven, and
// the refusals a scenario author sees. nccl-tests rows are nccl_tests_output_test's.

#include "workload/steps/step_parser.h"

#include <gtest/gtest.h>

namespace fabric_chaos::workload {
namespace {

std::unique_ptr<StepParser> make(StepFormat format, const std::string& pattern = "") {
  auto parser = makeStepParser({format, pattern});
  EXPECT_TRUE(parser.isOk()) << parser.status().toString();
  return parser.isOk() ? std::move(parser.value()) : nullptr;
}

TEST(JsonLinesParser, ReadsEveryFieldItKnows) {
  auto parser = make(StepFormat::kJsonLines);
  auto step = parser->feed(
      R"({"step": 12, "t_start": 8123.5, "duration_ms": 183.25, "bytes": 2626048, "loss": 0.3})");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->step, 12);
  EXPECT_DOUBLE_EQ(*step->t_start_s, 8123.5);
  EXPECT_DOUBLE_EQ(step->duration_ms, 183.25);
  EXPECT_EQ(step->bytes, 2626048);
  EXPECT_FALSE(step->t_wall_s);
  step = parser->feed(R"(  {"duration_ms": 7, "t_wall": 1764950000.25})");
  ASSERT_TRUE(step);
  EXPECT_FALSE(step->step);
  EXPECT_FALSE(step->bytes);
  EXPECT_DOUBLE_EQ(*step->t_wall_s, 1764950000.25);
}

TEST(JsonLinesParser, LinesThatAreNotStepsAreIgnored) {
  auto parser = make(StepFormat::kJsonLines);
  for (const char* line : {"", "epoch 3 done", "{", R"({"step": 1})", R"({"duration_ms": -1})",
                           R"({"duration_ms": "12"})", R"([{"duration_ms": 1}])",
                           "Traceback (most recent call last):"}) {
    EXPECT_FALSE(parser->feed(line)) << line;
  }
  // Odd optional fields are dropped, the step is kept.
  auto step = parser->feed(R"({"duration_ms": 1, "step": -3, "bytes": 1.5})");
  ASSERT_TRUE(step);
  EXPECT_FALSE(step->step);
  EXPECT_FALSE(step->bytes);
}

struct RegexCase {
  std::string pattern;
  std::string line;
  std::optional<double> duration_ms;  // nullopt: no step
  std::optional<int64_t> step = std::nullopt;
  std::optional<int64_t> bytes = std::nullopt;
};

TEST(RegexParser, NamedGroupsInEachUnit) {
  const RegexCase cases[] = {
      {R"(iter (?<step>\d+) took (?<duration_ms>[0-9.]+) ms)", "iter 7 took 12.5 ms", 12.5, 7},
      {R"(took (?<duration_s>[0-9.]+)s)", "step took 0.25s", 250.0},
      {R"(took (?<duration_us>\d+)us)", "allreduce took 1500us", 1.5},
      {R"((?<bytes>\d+) B in (?<duration_ms>\d+))", "moved 4096 B in 3", 3.0, std::nullopt, 4096},
      {R"(took (?<duration_ms>[0-9.]+))", "nothing here", std::nullopt},
      {R"(took (?<duration_ms>\S+))", "took inf", std::nullopt},
      {R"(took (?<duration_ms>\S+))", "took -4", std::nullopt},
      // An optional group that did not take part: the step is kept without it.
      {R"((?:step (?<step>\d+) )?took (?<duration_ms>\d+))", "took 9", 9.0},
  };
  for (const RegexCase& c : cases) {
    auto parser = make(StepFormat::kRegex, c.pattern);
    ASSERT_NE(parser, nullptr) << c.pattern;
    auto step = parser->feed(c.line);
    ASSERT_EQ(step.has_value(), c.duration_ms.has_value()) << c.pattern << " on " << c.line;
    if (!step) continue;
    EXPECT_DOUBLE_EQ(step->duration_ms, *c.duration_ms) << c.line;
    EXPECT_EQ(step->step, c.step) << c.line;
    EXPECT_EQ(step->bytes, c.bytes) << c.line;
  }
}

TEST(RegexParser, RefusalsSayWhatToFix) {
  auto refused = [](const StepParserSpec& spec) {
    core::Status s = checkStepParserSpec(spec);
    EXPECT_EQ(s.code(), core::StatusCode::kInvalidArgument);
    return s.message();
  };
  EXPECT_NE(refused({StepFormat::kRegex, "(?<step>\\d+)"}).find("no duration group"),
            std::string::npos);
  EXPECT_NE(refused({StepFormat::kRegex, "(?<duration_ms>\\d+) (?<duration_s>\\d+)"})
                .find("two duration groups"),
            std::string::npos);
  EXPECT_EQ(refused({StepFormat::kRegex, "took (?<duration_ms>\\d+"}),
            "the step pattern does not compile at offset 23: missing closing parenthesis");
  EXPECT_NE(refused({StepFormat::kRegex, ""}).find("needs a pattern"), std::string::npos);
  EXPECT_NE(refused({StepFormat::kJsonLines, "x"}).find("regex format only"), std::string::npos);
  EXPECT_TRUE(checkStepParserSpec({StepFormat::kNcclTests, ""}).isOk());
}

TEST(RegexParser, APathologicalPatternGivesUpInsteadOfHanging) {
  auto parser = make(StepFormat::kRegex, R"(^(a+)+(?<duration_ms>\d)$)");
  // Exponential backtracking over 40 characters would run for years; the match limit ends it
  // (without the limit, this test hangs until ctest's timeout).
  EXPECT_FALSE(parser->feed(std::string(40, 'a') + "!"));
  EXPECT_TRUE(parser->feed("aaa7")) << "the same pattern still matches what it should";
}

TEST(StepFormats, NamesRoundTrip) {
  for (StepFormat f : {StepFormat::kJsonLines, StepFormat::kRegex, StepFormat::kNcclTests}) {
    EXPECT_EQ(parseStepFormat(stepFormatName(f)), f);
  }
  EXPECT_FALSE(parseStepFormat("csv"));
  EXPECT_EQ(parseNcclPlacement("in-place"), NcclPlacement::kInPlace);
  EXPECT_FALSE(parseNcclPlacement("inplace"));
}

}  // namespace
}  // namespace fabric_chaos::workload
