#include "workload/steps/step_parser.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "workload/steps/nccl_tests_output.h"

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;

// A training log's numbers are plain decimals; anything else (inf, nan, hex) is not a time.
std::optional<double> finiteNumber(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<int64_t> wholeNumber(std::string_view text) {
  const auto value = finiteNumber(text);
  if (!value || *value < 0 || *value > 9.0e18 || std::floor(*value) != *value) return std::nullopt;
  return static_cast<int64_t>(*value);
}

class JsonLinesParser : public StepParser {
 public:
  std::optional<ParsedStep> feed(const std::string& line) override {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] != '{') return std::nullopt;
    const json doc = json::parse(line, nullptr, false);
    if (!doc.is_object()) return std::nullopt;
    const auto duration = doc.find("duration_ms");
    if (duration == doc.end() || !duration->is_number() || !(duration->get<double>() >= 0)) {
      return std::nullopt;
    }
    ParsedStep step;
    step.duration_ms = duration->get<double>();
    if (auto it = doc.find("step"); it != doc.end() && it->is_number_integer() && *it >= 0) {
      step.step = it->get<int64_t>();
    }
    if (auto it = doc.find("t_start"); it != doc.end() && it->is_number()) {
      step.t_start_s = it->get<double>();
    }
    if (auto it = doc.find("t_wall"); it != doc.end() && it->is_number()) {
      step.t_wall_s = it->get<double>();
    }
    if (auto it = doc.find("bytes"); it != doc.end() && it->is_number_integer() && *it >= 0) {
      step.bytes = it->get<int64_t>();
    }
    return step;
  }
};

// The groups a step regex may name; a duration is required, in one of three units.
struct DurationGroup {
  const char* name;
  double to_ms;
};
constexpr DurationGroup kDurationGroups[] = {
    {"duration_ms", 1.0}, {"duration_s", 1000.0}, {"duration_us", 0.001}};

// PCRE2 rather than std::regex: named groups, the syntax users know from Python and grep -P, and
// a match limit instead of libstdc++'s recursion that overflows the stack on long lines.
class Pcre2Pattern {
 public:
  static core::Result<std::unique_ptr<Pcre2Pattern>> compile(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     0, &error, &offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return Status(StatusCode::kInvalidArgument, "the step pattern does not compile at offset " +
                                                      std::to_string(offset) + ": " +
                                                      reinterpret_cast<const char*>(message));
    }
    return std::unique_ptr<Pcre2Pattern>(new Pcre2Pattern(code));
  }

  ~Pcre2Pattern() {
    pcre2_match_data_free(match_);
    pcre2_match_context_free(context_);
    pcre2_code_free(code_);
  }
  Pcre2Pattern(const Pcre2Pattern&) = delete;
  Pcre2Pattern& operator=(const Pcre2Pattern&) = delete;

  // The number of the group called `name`, or -1.
  int groupNumber(const char* name) const {
    const int n = pcre2_substring_number_from_name(code_, reinterpret_cast<PCRE2_SPTR>(name));
    return n > 0 ? n : -1;
  }

  // Group texts of a match (an unset group is ""), or nullopt when the line does not match.
  std::optional<std::vector<std::string_view>> match(const std::string& line) {
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(line.data()), line.size(), 0, 0,
                               match_, context_);
    if (rc < 0) return std::nullopt;  // no match, or the match limit: either way not a step
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_);
    std::vector<std::string_view> groups(pcre2_get_ovector_count(match_));
    for (size_t i = 0; i < groups.size() && static_cast<int>(i) < rc; ++i) {
      if (ovector[2 * i] == PCRE2_UNSET) continue;
      groups[i] =
          std::string_view(line).substr(ovector[2 * i], ovector[2 * i + 1] - ovector[2 * i]);
    }
    return groups;
  }

 private:
  explicit Pcre2Pattern(pcre2_code* code)
      : code_(code),
        match_(pcre2_match_data_create_from_pattern(code, nullptr)),
        context_(pcre2_match_context_create(nullptr)) {
    pcre2_set_match_limit(context_, 100000);
  }
  pcre2_code* code_;
  pcre2_match_data* match_;
  pcre2_match_context* context_;
};

class RegexParser : public StepParser {
 public:
  static core::Result<std::unique_ptr<StepParser>> make(const std::string& pattern) {
    auto compiled = Pcre2Pattern::compile(pattern);
    if (!compiled.isOk()) return compiled.status();
    auto parser = std::unique_ptr<RegexParser>(new RegexParser(std::move(compiled.value())));
    for (const DurationGroup& group : kDurationGroups) {
      const int n = parser->pattern_->groupNumber(group.name);
      if (n < 0) continue;
      if (parser->duration_group_ > 0) {
        return Status(StatusCode::kInvalidArgument,
                      "the step pattern names two duration groups; name exactly one of "
                      "duration_ms, duration_s and duration_us");
      }
      parser->duration_group_ = n;
      parser->to_ms_ = group.to_ms;
    }
    if (parser->duration_group_ < 0) {
      return Status(StatusCode::kInvalidArgument,
                    "the step pattern has no duration group: name one (?<duration_ms>...), "
                    "(?<duration_s>...) or (?<duration_us>...)");
    }
    parser->step_group_ = parser->pattern_->groupNumber("step");
    parser->bytes_group_ = parser->pattern_->groupNumber("bytes");
    parser->t_start_group_ = parser->pattern_->groupNumber("t_start");
    return std::unique_ptr<StepParser>(std::move(parser));
  }

  std::optional<ParsedStep> feed(const std::string& line) override {
    const auto groups = pattern_->match(line);
    if (!groups) return std::nullopt;
    auto text = [&](int n) { return n > 0 ? (*groups)[static_cast<size_t>(n)] : ""; };
    const auto duration = finiteNumber(text(duration_group_));
    if (!duration || *duration < 0) return std::nullopt;
    ParsedStep step;
    step.duration_ms = *duration * to_ms_;
    step.step = wholeNumber(text(step_group_));
    step.bytes = wholeNumber(text(bytes_group_));
    step.t_start_s = finiteNumber(text(t_start_group_));
    return step;
  }

 private:
  explicit RegexParser(std::unique_ptr<Pcre2Pattern> pattern) : pattern_(std::move(pattern)) {}
  std::unique_ptr<Pcre2Pattern> pattern_;
  int duration_group_ = -1;
  double to_ms_ = 1;
  int step_group_ = -1;
  int bytes_group_ = -1;
  int t_start_group_ = -1;
};

// Each data row is one sample: the row's size, its per-operation time, and nccl-tests' own busbw
// (the caller keeps it, because the bus factor depends on the collective and its GPU count).
class NcclTestsParser : public StepParser {
 public:
  explicit NcclTestsParser(NcclPlacement placement) : placement_(placement) {}

  std::optional<ParsedStep> feed(const std::string& line) override {
    const auto row = output_.feed(line);
    if (!row) return std::nullopt;
    const NcclTestsTiming& timing =
        placement_ == NcclPlacement::kOutOfPlace ? row->out_of_place : row->in_place;
    ParsedStep step;
    step.step = rows_++;
    step.duration_ms = timing.time_us / 1000.0;
    step.bytes = row->size_bytes;
    step.busbw_gbps = timing.busbw_gbps;
    return step;
  }

 private:
  NcclPlacement placement_;
  NcclTestsOutput output_;
  int64_t rows_ = 0;
};

}  // namespace

std::string_view stepFormatName(StepFormat format) {
  switch (format) {
    case StepFormat::kJsonLines:
      return "jsonl";
    case StepFormat::kRegex:
      return "regex";
    case StepFormat::kNcclTests:
      return "nccl-tests";
  }
  return "jsonl";
}

std::optional<StepFormat> parseStepFormat(std::string_view name) {
  for (StepFormat f : {StepFormat::kJsonLines, StepFormat::kRegex, StepFormat::kNcclTests}) {
    if (stepFormatName(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view ncclPlacementName(NcclPlacement placement) {
  return placement == NcclPlacement::kOutOfPlace ? "out-of-place" : "in-place";
}

std::optional<NcclPlacement> parseNcclPlacement(std::string_view name) {
  for (NcclPlacement p : {NcclPlacement::kOutOfPlace, NcclPlacement::kInPlace}) {
    if (ncclPlacementName(p) == name) return p;
  }
  return std::nullopt;
}

core::Status checkStepParserSpec(const StepParserSpec& spec) {
  auto parser = makeStepParser(spec);
  return parser.isOk() ? Status::ok() : parser.status();
}

core::Result<std::unique_ptr<StepParser>> makeStepParser(const StepParserSpec& spec) {
  if (spec.format != StepFormat::kRegex && !spec.pattern.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "a step pattern is for the regex format only, not " +
                      std::string(stepFormatName(spec.format)));
  }
  switch (spec.format) {
    case StepFormat::kJsonLines:
      return std::unique_ptr<StepParser>(std::make_unique<JsonLinesParser>());
    case StepFormat::kRegex:
      if (spec.pattern.empty()) {
        return Status(StatusCode::kInvalidArgument, "the regex format needs a pattern");
      }
      return RegexParser::make(spec.pattern);
    case StepFormat::kNcclTests:
      return std::unique_ptr<StepParser>(std::make_unique<NcclTestsParser>(spec.placement));
  }
  return Status(StatusCode::kInvalidArgument, "unknown step format");
}

}  // namespace fabric_chaos::workload
