#pragma once
// The stdout of NVIDIA's nccl-tests (all_reduce_perf and friends) read line by line: each data row
// is one size's timing. Columns come from the table's own header line, because they differ between
// nccl-tests versions and options. Pure; one instance per stream, one thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric_chaos::workload {

// The per-iteration columns of -I 1 (nccl-tests 2.19.2+), over the timed iterations.
struct NcclTestsIterationStats {
  double min_us = 0;
  double max_us = 0;
  double p99_us = 0;
  double cv_pct = 0;  // coefficient of variation
};

struct NcclTestsTiming {
  double time_us = 0;  // "time", or "cputime" under -C 1
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  // "#wrong": nullopt when "N/A" (-c 0, or in-place alltoall/sendrecv, which nccl-tests never
  // checks) and before 2.13, whose column was "error" instead.
  std::optional<int64_t> wrong;
  std::optional<double> max_error;  // the pre-2.13 "error" column: the largest deviation seen
  std::optional<NcclTestsIterationStats> per_iteration;
};

struct NcclTestsRow {
  int64_t size_bytes = 0;
  int64_t count = 0;
  std::string type;   // "float"
  std::string redop;  // "sum"; "" when the binary prints no redop column; "none" when it prints one
  int root = -1;      // -1 when the binary prints no root column
  NcclTestsTiming out_of_place;
  NcclTestsTiming in_place;
  std::string timestamp;  // -S 1 (2.17.6+): "YYYY-MM-DD HH:MM:SS", local time; "" otherwise
};

class NcclTestsOutput {
 public:
  // One line without its newline. A data row returns its values; headers, comments, blank and
  // unrecognised lines return nullopt (headers update what the accessors below report). A row that
  // NCCL's own log lines split in two (they share the process's stdout) is returned once its last
  // part arrives.
  std::optional<NcclTestsRow> feed(const std::string& line);
  int iters() const;        // "iters: N" from the header, 0 until seen
  int warmupIters() const;  // "warmup iters: N"
  int ranks() const;        // number of "#  Rank" lines seen (the GPUs in the test), 0 until seen
  // "# Avg bus bandwidth    : x": nullopt until seen, and when x is nan (a run with no rows).
  std::optional<double> averageBusBandwidthGBps() const;
  std::optional<int64_t> outOfBoundsValues() const;  // "# Out of bounds values : N OK|FAILED"
  int rowsSeen() const;

  enum class Column : uint8_t;  // what a table column holds (defined in the .cc)

 private:
  // A row read so far: the columns before next_column are filled in.
  struct Partial {
    NcclTestsRow row;
    size_t next_column = 0;
  };

  void readComment(std::string_view line);
  void readTableHeader(std::string_view line, const std::vector<std::string_view>& words);
  std::optional<NcclTestsRow> readRow(std::string_view line);
  bool readSegment(std::string_view line, Partial& partial) const;
  bool readWords(std::vector<std::string_view> words, size_t from, size_t to,
                 NcclTestsRow& row) const;

  // The table's layout, from its column header line; empty until one is read.
  std::vector<Column> columns_;
  std::vector<int> groups_;     // per column: -1 before the timings, 0 out-of-place, 1 in-place
  std::vector<size_t> ends_;    // per column: where its label ends in the header line
  std::vector<size_t> breaks_;  // columns after which nccl-tests pauses to time a collective
  std::optional<Partial> partial_;
  int iters_ = 0;
  int warmup_iters_ = 0;
  int ranks_ = 0;
  int rows_ = 0;
  std::optional<double> average_busbw_;
  std::optional<int64_t> out_of_bounds_;
};

}  // namespace fabric_chaos::workload
