#include "workload/steps/nccl_tests_output.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <system_error>

namespace fabric_chaos::workload {

enum class NcclTestsOutput::Column : uint8_t {
  kSize,
  kCount,
  kType,
  kRedop,
  kRoot,
  kTime,
  kAlgbw,
  kBusbw,
  kWrong,
  kError,
  kIterMin,
  kIterMax,
  kIterP99,
  kIterCv,
  kTimestamp,
  kOther,  // a column this reader does not know: its word is skipped
};

namespace {

using Column = NcclTestsOutput::Column;

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Views into `text`, so a word's offset in the line is recoverable.
std::vector<std::string_view> splitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && isBlank(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !isBlank(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

std::optional<int64_t> parseInteger(std::string_view word) {
  int64_t value = 0;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// Finite only: a time that rounds to zero makes nccl-tests print inf bandwidth, and an average
// over no rows prints nan; neither is a measurement.
std::optional<double> parseDecimal(std::string_view word) {
  double value = 0;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<double> parseNonNegative(std::string_view word) {
  const auto value = parseDecimal(word);
  if (!value || *value < 0) return std::nullopt;
  return value;
}

// A name column holding a number means the words slid under the wrong columns.
bool isName(std::string_view word) {
  double value = 0;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, value);
  return !word.empty() && !(ec == std::errc() && ptr == end);
}

std::optional<int> parseInt(std::string_view word) {
  const auto value = parseInteger(word);
  if (!value || *value < INT_MIN || *value > INT_MAX) return std::nullopt;
  return static_cast<int>(*value);
}

bool hasShape(std::string_view word, std::string_view shape) {
  if (word.size() != shape.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    const bool digit = word[i] >= '0' && word[i] <= '9';
    if (shape[i] == 'd' ? !digit : word[i] != shape[i]) return false;
  }
  return true;
}

Column columnNamed(std::string_view name) {
  struct Named {
    std::string_view name;
    Column column;
  };
  static constexpr Named kNames[] = {
      {"size", Column::kSize},           {"count", Column::kCount},   {"type", Column::kType},
      {"redop", Column::kRedop},         {"root", Column::kRoot},     {"time", Column::kTime},
      {"cputime", Column::kTime},        {"algbw", Column::kAlgbw},   {"busbw", Column::kBusbw},
      {"#wrong", Column::kWrong},        {"error", Column::kError},   {"i_min", Column::kIterMin},
      {"i_max", Column::kIterMax},       {"i_p99", Column::kIterP99}, {"i_cv%", Column::kIterCv},
      {"timestamp", Column::kTimestamp},
  };
  for (const Named& n : kNames) {
    if (n.name == name) return n.column;
  }
  return Column::kOther;
}

bool isLeading(Column c) {
  return c == Column::kSize || c == Column::kCount || c == Column::kType || c == Column::kRedop ||
         c == Column::kRoot;
}

// One word into its column; false when it cannot be that column's value.
bool readField(Column column, int group, std::string_view word, NcclTestsRow& row) {
  NcclTestsTiming& timing = group == 0 ? row.out_of_place : row.in_place;
  auto stats = [&timing]() -> NcclTestsIterationStats& {
    if (!timing.per_iteration) timing.per_iteration.emplace();
    return *timing.per_iteration;
  };
  switch (column) {
    case Column::kSize:
    case Column::kCount: {
      const auto value = parseInteger(word);
      if (!value || *value < 0) return false;
      (column == Column::kSize ? row.size_bytes : row.count) = *value;
      return true;
    }
    case Column::kType:
      if (!isName(word)) return false;
      row.type = std::string(word);
      return true;
    case Column::kRedop:
      // Empty only where readWords restored the blank of 2.13.0-2.13.3.
      if (!word.empty() && !isName(word)) return false;
      row.redop = std::string(word);
      return true;
    case Column::kRoot: {
      const auto value = parseInt(word);
      if (!value) return false;
      row.root = *value;
      return true;
    }
    case Column::kWrong: {
      if (word == "N/A") return true;
      // "%6g": a count beyond six digits prints as 1.23457e+06.
      const auto value = parseNonNegative(word);
      if (!value || *value != std::floor(*value) || *value > 9.0e18) return false;
      timing.wrong = static_cast<int64_t>(*value);
      return true;
    }
    case Column::kError: {
      if (word == "N/A") return true;
      const auto value = parseDecimal(word);
      if (!value) return false;
      timing.max_error = *value;
      return true;
    }
    case Column::kOther:
      return true;
    case Column::kTimestamp:
      return false;  // two words: readWords reads it
    default:
      break;
  }
  const auto value = parseNonNegative(word);
  if (!value) return false;
  switch (column) {
    case Column::kTime:
      timing.time_us = *value;
      break;
    case Column::kAlgbw:
      timing.algbw_gbps = *value;
      break;
    case Column::kBusbw:
      timing.busbw_gbps = *value;
      break;
    case Column::kIterMin:
      stats().min_us = *value;
      break;
    case Column::kIterMax:
      stats().max_us = *value;
      break;
    case Column::kIterP99:
      stats().p99_us = *value;
      break;
    case Column::kIterCv:
      stats().cv_pct = *value;
      break;
    default:
      return false;
  }
  return true;
}

}  // namespace

std::optional<NcclTestsRow> NcclTestsOutput::feed(const std::string& line) {
  std::string_view text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  if (text[first] == '#') {
    // Only nccl-tests writes these, and never inside a row: a row still waiting was cut short.
    partial_.reset();
    readComment(text);
    return std::nullopt;
  }
  auto row = readRow(text);
  if (row && rows_ < INT_MAX) ++rows_;
  return row;
}

void NcclTestsOutput::readComment(std::string_view line) {
  const std::vector<std::string_view> all = splitWords(line.substr(line.find('#') + 1));
  if (all.empty()) return;
  const auto is = [&all](size_t i, std::string_view word) {
    return i < all.size() && all[i] == word;
  };
  if (is(0, "size")) {
    readTableHeader(line, all);
  } else if (is(0, "Rank") && all.size() > 1 && parseInteger(all[1])) {
    // "#  Rank  0 Group  0 Pid  1234 on host device  0 [0000:07:00] NVIDIA H100" (2.13.4+), and
    // "#   Rank  0 Pid  1234 on host device  0 [0x07] Tesla V100" before.
    ++ranks_;
  } else if (is(0, "Using") && is(1, "devices")) {
    ranks_ = 0;  // each run lists its devices once, every process's after this line
  } else if (is(0, "nThread")) {
    for (size_t i = 0; i + 1 < all.size(); ++i) {
      if (all[i] != "iters:") continue;
      const auto value = parseInt(all[i + 1]);
      if (!value) continue;
      if (i > 0 && all[i - 1] == "warmup") {
        warmup_iters_ = *value;
      } else if (i == 0 || all[i - 1] != "agg") {
        iters_ = *value;
      }
    }
  } else if (is(0, "Avg") && is(1, "bus") && is(2, "bandwidth") && is(3, ":")) {
    average_busbw_ = all.size() > 4 ? parseDecimal(all[4]) : std::nullopt;
  } else if (is(0, "Out") && is(1, "of") && is(2, "bounds") && is(3, "values") && is(4, ":")) {
    out_of_bounds_ = all.size() > 5 ? parseInteger(all[5]) : std::nullopt;
  }
}

void NcclTestsOutput::readTableHeader(std::string_view line,
                                      const std::vector<std::string_view>& words) {
  columns_.clear();
  groups_.clear();
  ends_.clear();
  breaks_.clear();
  std::vector<Column> columns;
  std::vector<int> groups;
  std::vector<size_t> ends;
  int group = -1;
  for (std::string_view word : words) {
    const Column column = columnNamed(word);
    if (column == Column::kTime) ++group;
    columns.push_back(column);
    groups.push_back(group);
    // Labels are right-aligned over their values, and "# %10s" is as wide as "%12li".
    ends.push_back(static_cast<size_t>(word.data() - line.data()) + word.size());
  }
  // A table this reader cannot lay out reads no rows, rather than rows under the wrong columns.
  if (group != 1) return;
  const size_t n = columns.size();
  for (size_t i = 0; i < n; ++i) {
    if (columns[i] == Column::kTimestamp && i + 1 != n) return;
    const bool timing = columns[i] != Column::kOther && !isLeading(columns[i]);
    if ((isLeading(columns[i]) && groups[i] >= 0) || (timing && groups[i] < 0)) return;
    for (size_t j = 0; j < i; ++j) {
      if (columns[j] == columns[i] && groups[j] == groups[i] && columns[i] != Column::kOther) {
        return;
      }
    }
  }
  for (Column needed : {Column::kSize, Column::kCount, Column::kType}) {
    bool found = false;
    for (size_t i = 0; i < n; ++i) found = found || columns[i] == needed;
    if (!found) return;
  }
  for (int g : {0, 1}) {
    for (Column needed : {Column::kAlgbw, Column::kBusbw}) {
      bool found = false;
      for (size_t i = 0; i < n; ++i) found = found || (columns[i] == needed && groups[i] == g);
      if (!found) return;
    }
  }
  columns_ = std::move(columns);
  groups_ = std::move(groups);
  ends_ = std::move(ends);
  // nccl-tests prints a row in three goes, timing a collective between them: the leading
  // columns, the out-of-place timing, then the in-place one. NCCL's own log lines can land in
  // those pauses.
  for (size_t i = 0; i < n; ++i) {
    if (columns_[i] == Column::kTime) breaks_.push_back(i);
  }
  breaks_.push_back(n);
}

std::optional<NcclTestsRow> NcclTestsOutput::readRow(std::string_view line) {
  if (columns_.empty()) return std::nullopt;  // no table yet: NCCL's INFO lines come first
  const auto done = [this](Partial& partial) -> std::optional<NcclTestsRow> {
    if (partial.next_column < columns_.size()) {
      partial_ = std::move(partial);
      return std::nullopt;
    }
    partial_.reset();
    return std::move(partial.row);
  };
  if (partial_) {
    Partial rest = *partial_;
    if (readSegment(line, rest)) return done(rest);
  }
  Partial fresh;
  if (readSegment(line, fresh)) return done(fresh);
  // Anything else (NCCL's log lines, blank lines, a truncated row) leaves a split row waiting.
  return std::nullopt;
}

// Reads the line as the columns from partial.next_column up to one of the breaks: the whole line
// exactly, or the start of it when an NCCL log line (which has no leading newline, unlike a WARN)
// was glued on right after a column.
bool NcclTestsOutput::readSegment(std::string_view line, Partial& partial) const {
  const size_t from = partial.next_column;
  const std::vector<std::string_view> words = splitWords(line);
  for (auto to = breaks_.rbegin(); to != breaks_.rend() && *to > from; ++to) {
    NcclTestsRow row = partial.row;
    if (readWords(words, from, *to, row)) {
      partial = {std::move(row), *to};
      return true;
    }
  }
  const size_t base = from == 0 ? 0 : ends_[from - 1];
  for (auto to = breaks_.rbegin(); to != breaks_.rend() && *to > from; ++to) {
    const size_t end = ends_[*to - 1] - base;
    if (end >= line.size() || isBlank(line[end - 1]) || isBlank(line[end])) continue;
    if (line.find("NCCL", end) == std::string_view::npos) continue;
    NcclTestsRow row = partial.row;
    if (readWords(splitWords(line.substr(0, end)), from, *to, row)) {
      partial = {std::move(row), *to};
      return true;
    }
  }
  return false;
}

bool NcclTestsOutput::readWords(std::vector<std::string_view> words, size_t from, size_t to,
                                NcclTestsRow& row) const {
  size_t expected = to - from;
  if (to == columns_.size() && columns_.back() == Column::kTimestamp) ++expected;  // date, time
  // nccl-tests 2.13.0-2.13.3 printed "%6s" of "" as the redop of collectives without one: the
  // row is a word short, and the root's number sits where the redop's name should.
  for (size_t c = from; c < to; ++c) {
    if (columns_[c] != Column::kRedop) continue;
    const size_t at = c - from;
    if (words.size() + 1 == expected && at < words.size() && parseInteger(words[at])) {
      words.insert(words.begin() + static_cast<std::ptrdiff_t>(at), std::string_view());
    }
  }
  if (words.size() != expected) return false;
  size_t w = 0;
  for (size_t c = from; c < to; ++c) {
    if (columns_[c] == Column::kTimestamp) {
      if (!hasShape(words[w], "dddd-dd-dd") || !hasShape(words[w + 1], "dd:dd:dd")) return false;
      row.timestamp = std::string(words[w]) + " " + std::string(words[w + 1]);
      w += 2;
    } else if (!readField(columns_[c], groups_[c], words[w++], row)) {
      return false;
    }
  }
  return true;
}

int NcclTestsOutput::iters() const { return iters_; }
int NcclTestsOutput::warmupIters() const { return warmup_iters_; }
int NcclTestsOutput::ranks() const { return ranks_; }
std::optional<double> NcclTestsOutput::averageBusBandwidthGBps() const { return average_busbw_; }
std::optional<int64_t> NcclTestsOutput::outOfBoundsValues() const { return out_of_bounds_; }
int NcclTestsOutput::rowsSeen() const { return rows_; }

}  // namespace fabric_chaos::workload
