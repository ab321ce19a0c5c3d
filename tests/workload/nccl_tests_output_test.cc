// nccl-tests' stdout read row by row (workload/steps/nccl_tests_output.h), against outputs
// recorded in each version's format (tests/workload/data/nccl_tests/README.md says which), plus
// table-driven malformed lines and header variants.

#include "workload/steps/nccl_tests_output.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fabric_chaos::workload {
namespace {

std::vector<std::string> fixtureLines(const std::string& name) {
  std::ifstream in(std::string(FC_NCCL_TESTS_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Parsed {
  NcclTestsOutput output;
  std::vector<NcclTestsRow> rows;
};

Parsed parseFixture(const std::string& name) {
  Parsed parsed;
  for (const std::string& line : fixtureLines(name)) {
    if (auto row = parsed.output.feed(line)) parsed.rows.push_back(std::move(*row));
  }
  return parsed;
}

void expectTiming(const NcclTestsTiming& timing, double time_us, double algbw, double busbw,
                  std::optional<int64_t> wrong) {
  EXPECT_DOUBLE_EQ(timing.time_us, time_us);
  EXPECT_DOUBLE_EQ(timing.algbw_gbps, algbw);
  EXPECT_DOUBLE_EQ(timing.busbw_gbps, busbw);
  EXPECT_EQ(timing.wrong, wrong);
}

// nccl-tests 2.18 layout: the table header as writeResultHeader prints it without -S or -I.
const char* const kHeader =
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time"
    "   algbw   busbw  #wrong ";
const char* const kRow =
    "    67108864      16777216     float     sum      -1   631.20  106.32  186.06       0"
    "   629.86  106.55  186.46       0";

TEST(NcclTestsOutputTest, AllReduceOnOneEightGpuNode) {
  const Parsed p = parseFixture("all_reduce_perf_1node_8gpu.txt");
  ASSERT_EQ(p.rows.size(), 25u);  // 8 B to 128 MiB, doubling
  EXPECT_EQ(p.output.rowsSeen(), 25);
  EXPECT_EQ(p.output.iters(), 20);
  EXPECT_EQ(p.output.warmupIters(), 5);
  EXPECT_EQ(p.output.ranks(), 8);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 55.0248);
  EXPECT_EQ(p.output.outOfBoundsValues(), 0);

  const NcclTestsRow& first = p.rows.front();
  EXPECT_EQ(first.size_bytes, 8);
  EXPECT_EQ(first.count, 2);
  EXPECT_EQ(first.type, "float");
  EXPECT_EQ(first.redop, "sum");
  EXPECT_EQ(first.root, -1);
  expectTiming(first.out_of_place, 23.74, 0.0, 0.0, 0);
  expectTiming(first.in_place, 24.44, 0.0, 0.0, 0);
  EXPECT_FALSE(first.out_of_place.max_error);
  EXPECT_FALSE(first.out_of_place.per_iteration);
  EXPECT_EQ(first.timestamp, "");

  // "%7.1f" from 100 us, as 2.13-2.17.5 print the time.
  expectTiming(p.rows[21].out_of_place, 152.4, 110.06, 192.61, 0);
  const NcclTestsRow& last = p.rows.back();
  EXPECT_EQ(last.size_bytes, 134217728);
  EXPECT_EQ(last.count, 33554432);
  expectTiming(last.out_of_place, 1016.5, 132.04, 231.06, 0);
  expectTiming(last.in_place, 1041.0, 128.93, 225.63, 0);

  for (size_t i = 1; i < p.rows.size(); ++i) {
    EXPECT_EQ(p.rows[i].size_bytes, 2 * p.rows[i - 1].size_bytes) << i;
  }
}

TEST(NcclTestsOutputTest, RunCyclesRepeatTheSize) {
  // -b 64M -e 64M -N 3 over two nodes of eight single-GPU processes (nccl-tests 2.19.6).
  const Parsed p = parseFixture("all_reduce_perf_N3_fixed_size.txt");
  ASSERT_EQ(p.rows.size(), 3u);
  for (const NcclTestsRow& row : p.rows) {
    EXPECT_EQ(row.size_bytes, 67108864);
    EXPECT_EQ(row.count, 16777216);
    EXPECT_EQ(row.redop, "sum");
  }
  expectTiming(p.rows[0].out_of_place, 697.40, 96.23, 180.42, 0);
  expectTiming(p.rows[1].out_of_place, 700.19, 95.84, 179.71, 0);
  expectTiming(p.rows[2].in_place, 693.77, 96.73, 181.37, 0);
  EXPECT_EQ(p.output.rowsSeen(), 3);
  EXPECT_EQ(p.output.iters(), 50);
  EXPECT_EQ(p.output.warmupIters(), 5);
  EXPECT_EQ(p.output.ranks(), 16);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 179.509);
}

TEST(NcclTestsOutputTest, AllGatherPrintsNoneAndRootMinusOne) {
  const Parsed p = parseFixture("all_gather_perf.txt");
  ASSERT_EQ(p.rows.size(), 11u);  // 1 KiB to 1 GiB, x4
  EXPECT_EQ(p.rows[0].size_bytes, 1024);
  EXPECT_EQ(p.rows[0].count, 32);  // per rank: the size is what each rank receives
  EXPECT_EQ(p.rows[0].redop, "none");
  EXPECT_EQ(p.rows[0].root, -1);
  expectTiming(p.rows[0].out_of_place, 10.89, 0.09, 0.08, 0);
  const NcclTestsRow& last = p.rows.back();
  EXPECT_EQ(last.size_bytes, 1073741824);
  EXPECT_EQ(last.count, 33554432);
  expectTiming(last.out_of_place, 2548.00, 421.41, 368.73, 0);
  expectTiming(last.in_place, 2580.57, 416.09, 364.08, 0);
  EXPECT_EQ(p.output.ranks(), 8);
  EXPECT_EQ(p.output.iters(), 20);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 147.899);
}

TEST(NcclTestsOutputTest, OldAllGatherHasNoRedopRootOrWrongCount) {
  // nccl-tests 2.11: per-collective headers, and "error" (a deviation, "%5.0le") for "#wrong".
  const Parsed p = parseFixture("all_gather_perf_v2.11.txt");
  ASSERT_EQ(p.rows.size(), 11u);
  const NcclTestsRow& zero = p.rows[0];  // 8 B over 4 ranks rounds down to nothing each
  EXPECT_EQ(zero.size_bytes, 0);
  EXPECT_EQ(zero.count, 0);
  EXPECT_EQ(zero.type, "float");
  EXPECT_EQ(zero.redop, "");
  EXPECT_EQ(zero.root, -1);
  expectTiming(zero.out_of_place, 9.48, 0.0, 0.0, std::nullopt);
  EXPECT_EQ(zero.out_of_place.max_error, 0.0);
  const NcclTestsRow& last = p.rows.back();
  EXPECT_EQ(last.size_bytes, 8388608);
  EXPECT_EQ(last.count, 524288);
  expectTiming(last.out_of_place, 131.0, 64.01, 48.01, std::nullopt);
  expectTiming(last.in_place, 130.3, 64.39, 48.29, std::nullopt);
  EXPECT_EQ(last.in_place.max_error, 0.0);
  EXPECT_EQ(p.output.ranks(), 4);  // "#   Rank  0 Pid ..." before 2.13.4
  EXPECT_EQ(p.output.iters(), 20);
  EXPECT_EQ(p.output.warmupIters(), 5);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 11.0301);
}

TEST(NcclTestsOutputTest, EarlyTwoThirteenLeavesTheRedopBlank) {
  // 2.13.0-2.13.3 print "%6s" of "" for broadcast's redop: one word fewer than the header.
  const Parsed p = parseFixture("broadcast_perf_v2.13.0.txt");
  ASSERT_EQ(p.rows.size(), 5u);
  for (const NcclTestsRow& row : p.rows) {
    EXPECT_EQ(row.redop, "");
    EXPECT_EQ(row.root, 0);
  }
  EXPECT_EQ(p.rows[3].size_bytes, 8388608);
  expectTiming(p.rows[3].out_of_place, 72.88, 115.11, 115.11, 0);
  expectTiming(p.rows[3].in_place, 73.11, 114.75, 114.75, 0);
  EXPECT_EQ(p.output.ranks(), 4);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 91.5276);
}

TEST(NcclTestsOutputTest, CheckOffPrintsNotApplicable) {
  // -c 0 -N 2 -d half, nccl-tests 2.13.10.
  const Parsed p = parseFixture("all_reduce_perf_check_off.txt");
  ASSERT_EQ(p.rows.size(), 4u);
  const std::vector<int64_t> sizes = {268435456, 536870912, 268435456, 536870912};
  for (size_t i = 0; i < p.rows.size(); ++i) {
    EXPECT_EQ(p.rows[i].size_bytes, sizes[i]);
    EXPECT_EQ(p.rows[i].type, "half");
    EXPECT_FALSE(p.rows[i].out_of_place.wrong) << i;
    EXPECT_FALSE(p.rows[i].in_place.wrong) << i;
  }
  EXPECT_EQ(p.rows[1].count, 268435456);
  expectTiming(p.rows[2].out_of_place, 2007.0, 133.75, 234.06, std::nullopt);
  EXPECT_EQ(p.output.iters(), 20);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 232.273);
}

TEST(NcclTestsOutputTest, AlltoallCountsWrongOutOfPlaceOnly) {
  const Parsed p = parseFixture("alltoall_perf.txt");
  ASSERT_EQ(p.rows.size(), 5u);
  for (const NcclTestsRow& row : p.rows) EXPECT_FALSE(row.in_place.wrong);  // never checked
  EXPECT_EQ(p.rows[0].out_of_place.wrong, 0);
  // "%6g" of 1572864 is 1.57286e+06: six significant digits are all nccl-tests prints.
  EXPECT_EQ(p.rows[3].size_bytes, 4194304);
  expectTiming(p.rows[3].out_of_place, 30.21, 138.83, 121.48, 1572860);
  EXPECT_EQ(p.output.outOfBoundsValues(), 1);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 82.0788);
}

TEST(NcclTestsOutputTest, PerIterationColumnsAndTimestamps) {
  // -I 1 -S 1, nccl-tests 2.19.6.
  const Parsed p = parseFixture("reduce_scatter_perf_per_iter_timestamps.txt");
  ASSERT_EQ(p.rows.size(), 3u);
  const NcclTestsRow& first = p.rows[0];
  EXPECT_EQ(first.size_bytes, 1048576);
  EXPECT_EQ(first.count, 32768);
  expectTiming(first.out_of_place, 18.73, 55.98, 48.98, 0);
  ASSERT_TRUE(first.out_of_place.per_iteration);
  EXPECT_DOUBLE_EQ(first.out_of_place.per_iteration->min_us, 17.42);
  EXPECT_DOUBLE_EQ(first.out_of_place.per_iteration->max_us, 24.54);
  EXPECT_DOUBLE_EQ(first.out_of_place.per_iteration->p99_us, 22.85);
  EXPECT_DOUBLE_EQ(first.out_of_place.per_iteration->cv_pct, 7.52);
  expectTiming(first.in_place, 18.49, 56.72, 49.63, 0);
  ASSERT_TRUE(first.in_place.per_iteration);
  EXPECT_DOUBLE_EQ(first.in_place.per_iteration->cv_pct, 9.00);
  EXPECT_EQ(first.timestamp, "2026-12-05 14:02:11");
  EXPECT_EQ(p.rows[2].timestamp, "2026-12-05 14:02:12");
  expectTiming(p.rows[2].in_place, 26.54, 158.03, 138.28, 0);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 90.5429);
}

TEST(NcclTestsOutputTest, NcclLogLinesAndATruncatedEnd) {
  // NCCL_DEBUG=INFO over two nodes; an IB port flaps mid-run and the job dies mid-row.
  NcclTestsOutput output;
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> lines = fixtureLines("all_reduce_perf_nccl_debug_truncated.txt");
  for (const std::string& line : lines) {
    auto row = output.feed(line);
    if (row) rows.push_back(*row);
    if (line.find("NCCL") != std::string::npos) {
      EXPECT_FALSE(row) << line;
    }
  }
  EXPECT_FALSE(output.feed(lines.back()));  // the truncated last row
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(output.rowsSeen(), 5);
  EXPECT_EQ(output.ranks(), 16);
  EXPECT_EQ(output.iters(), 20);
  EXPECT_FALSE(output.averageBusBandwidthGBps());  // the footer never came
  EXPECT_FALSE(output.outOfBoundsValues());

  const std::vector<int64_t> sizes = {8388608, 16777216, 33554432, 67108864, 134217728};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].size_bytes, sizes[i]);
  expectTiming(rows[1].out_of_place, 228.69, 73.36, 137.55, 0);
  // Port error during the out-of-place run: its WARN (which starts with a newline) came right
  // after the row's leading columns, and the slow timing followed on a line of its own.
  EXPECT_EQ(rows[2].count, 8388608);
  expectTiming(rows[2].out_of_place, 3725.66, 9.01, 16.89, 0);
  expectTiming(rows[2].in_place, 718.23, 46.72, 87.60, 0);
  // Port back during the in-place run: the WARN split the row after the out-of-place timing.
  expectTiming(rows[3].out_of_place, 1180.55, 56.85, 106.59, 0);
  expectTiming(rows[3].in_place, 731.36, 91.76, 172.05, 0);
  expectTiming(rows[4].in_place, 1391.07, 96.48, 180.91, 0);
}

TEST(NcclTestsOutputTest, CollectiveLogGluedOntoRows) {
  // NCCL_DEBUG_SUBSYS=COLL logs each call with no newline before it: glued onto the row's parts.
  const Parsed p = parseFixture("all_reduce_perf_debug_coll.txt");
  ASSERT_EQ(p.rows.size(), 3u);
  EXPECT_EQ(p.rows[0].size_bytes, 1048576);
  EXPECT_EQ(p.rows[0].count, 262144);
  EXPECT_EQ(p.rows[0].redop, "sum");
  expectTiming(p.rows[0].out_of_place, 49.79, 21.06, 39.49, 0);
  expectTiming(p.rows[0].in_place, 49.51, 21.18, 39.71, 0);
  EXPECT_EQ(p.rows[2].size_bytes, 4194304);
  expectTiming(p.rows[2].out_of_place, 85.66, 48.96, 91.80, 0);
  expectTiming(p.rows[2].in_place, 85.70, 48.94, 91.77, 0);
  EXPECT_EQ(p.output.ranks(), 16);
  EXPECT_EQ(p.output.iters(), 2);
  EXPECT_EQ(p.output.warmupIters(), 1);
  EXPECT_EQ(p.output.averageBusBandwidthGBps(), 65.2701);
}

TEST(NcclTestsOutputTest, MalformedLinesAreNotRows) {
  struct Case {
    const char* what;
    std::string line;
  };
  const std::string pre = "    67108864      16777216     float     sum      -1";
  const std::string oop = "   631.20  106.32  186.06       0";
  const std::vector<Case> cases = {
      {"blank", ""},
      {"spaces", "     \t  "},
      {"truncated mid-field", pre + oop + "   62"},
      {"in-place #wrong missing", pre + oop + "   629.86  106.55  186.46"},
      {"one word too many", std::string(kRow) + "       0"},
      {"time not a number", pre + "   abc.de  106.32  186.06       0" + oop},
      {"size not a number", "    6710886x" + std::string(kRow).substr(12)},
      {"size in hex", "  0x04000000" + std::string(kRow).substr(12)},
      {"size beyond int64",
       "99999999999999999999      16777216     float     sum      -1" + oop + oop},
      {"negative time", pre + "   -631.2  106.32  186.06       0" + oop},
      {"negative busbw", pre + "   631.20  106.32  -186.1       0" + oop},
      {"infinite busbw", pre + "     0.00     inf     inf       0" + oop},
      {"nan time", pre + "      nan  106.32  186.06       0" + oop},
      {"signed bandwidth", pre + "   631.20  +106.3  186.06       0" + oop},
      {"fractional #wrong", pre + "   631.20  106.32  186.06     0.5" + oop},
      {"negative #wrong", pre + "   631.20  106.32  186.06      -1" + oop},
      {"#wrong is a word", pre + "   631.20  106.32  186.06     bad" + oop},
      {"type is a number", "    67108864      16777216         7     sum      -1" + oop + oop},
      {"redop is a number", "    67108864      16777216     float       7      -1" + oop + oop},
      {"root not an integer", "    67108864      16777216     float     sum    -1.5" + oop + oop},
      {"root beyond int", "    67108864      16777216     float     sum 4294967296" + oop + oop},
      {"size with a comma", "   67108864," + std::string(kRow).substr(12)},
      {"NCCL INFO",
       "gpu-h100-a01:183402:183402 [0] NCCL INFO comm 0x55d0c8a04f30 rank 0 nranks 16 cudaDev 0 "
       "nvmlDev 0 busId 18000 commId 0x9e3b5c1d7a4f2e60 - Init COMPLETE"},
      {"NCCL WARN",
       "gpu-h100-b07:52144:52215 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_3:1 Got async "
       "event : port error"},
      {"nccl-tests failure",
       "gpu-h100-b07: Test NCCL failure common.cu:1181 'remote process exited or there was a "
       "network error / '"},
      {"MPI tag prefix", "[1,0]<stdout>:" + std::string(kRow)},
      {"only the body", oop + oop},
      {"a preamble glued to something that is not NCCL's", pre + "garbage follows here"},
  };
  NcclTestsOutput output;
  ASSERT_FALSE(output.feed(kHeader));
  for (const Case& c : cases) {
    EXPECT_FALSE(output.feed(c.line)) << c.what << ": '" << c.line << "'";
    // A cut row waiting for its rest must not pick up a later line's timing either.
    EXPECT_FALSE(output.feed(oop + oop)) << "after " << c.what;
  }
  EXPECT_EQ(output.rowsSeen(), 0);
  // And the stream still reads rows after all of that.
  auto row = output.feed(kRow);
  ASSERT_TRUE(row);
  expectTiming(row->out_of_place, 631.20, 106.32, 186.06, 0);
  expectTiming(row->in_place, 629.86, 106.55, 186.46, 0);
  EXPECT_EQ(output.rowsSeen(), 1);
}

TEST(NcclTestsOutputTest, NoRowsBeforeTheTableHeader) {
  NcclTestsOutput output;
  EXPECT_FALSE(output.feed(kRow));
  EXPECT_FALSE(
      output.feed("#        (B)    (elements)                               (us)  (GB/s)"));
  EXPECT_TRUE(output.feed(kHeader) == std::nullopt);
  EXPECT_TRUE(output.feed(kRow));
  EXPECT_EQ(output.rowsSeen(), 1);
}

TEST(NcclTestsOutputTest, HeaderVariants) {
  struct Case {
    const char* what;
    std::string header;
    std::string row;
    std::string redop;
    int root;
    double in_place_time_us;
    std::optional<int64_t> wrong;
  };
  const std::vector<Case> cases = {
      {"2.13-2.17.5, one space before #wrong",
       "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
       "time"
       "   algbw   busbw #wrong",
       "         256            64     float     max      -1    23.96    0.01    0.02      0    "
       "24.00"
       "    0.01    0.02      3",
       "max", -1, 24.00, 3},
      {"pre-2.13 reduce: redop and root",
       "#       size         count      type   redop    root     time   algbw   busbw  error     "
       "time"
       "   algbw   busbw  error",
       "        1024           256     float    prod       2    12.40    0.08    0.08  0e+00    "
       "12.51"
       "    0.08    0.08  0e+00",
       "prod", 2, 12.51, std::nullopt},
      {"pre-2.13 broadcast: root only",
       "#       size         count      type    root     time   algbw   busbw  error     time   "
       "algbw"
       "   busbw  error",
       "        1024           256     float       3    12.40    0.08    0.08  0e+00    12.51    "
       "0.08"
       "    0.08  0e+00",
       "", 3, 12.51, std::nullopt},
      {"pre-2.13 all_reduce, check off: redop only",
       "#       size         count      type   redop     time   algbw   busbw  error     time   "
       "algbw"
       "   busbw  error",
       "        1024           256    double     min    12.40    0.08    0.16    N/A    12.51    "
       "0.08"
       "    0.16    N/A",
       "min", -1, 12.51, std::nullopt},
      {"-C 1: cputime",
       "#       size         count      type   redop    root  cputime   algbw   busbw  #wrong  "
       "cputime"
       "   algbw   busbw  #wrong ",
       "     1048576        262144     float     sum      -1    31.43   33.36   58.39       0    "
       "31.33"
       "   33.47   58.57       0",
       "sum", -1, 31.33, 0},
      {"time beyond the field: scientific", std::string(kHeader),
       "  8589934592    2147483648     float     sum      -1  6.5e+04  131.20  229.60       0  "
       "6.6e+04"
       "  130.15  227.76  1e+06",
       "sum", -1, 66000.0, 1000000},
  };
  for (const Case& c : cases) {
    NcclTestsOutput output;
    EXPECT_FALSE(output.feed(c.header)) << c.what;
    auto row = output.feed(c.row);
    ASSERT_TRUE(row) << c.what;
    EXPECT_EQ(row->redop, c.redop) << c.what;
    EXPECT_EQ(row->root, c.root) << c.what;
    EXPECT_DOUBLE_EQ(row->in_place.time_us, c.in_place_time_us) << c.what;
    EXPECT_EQ(row->in_place.wrong, c.wrong) << c.what;
    EXPECT_GT(row->out_of_place.busbw_gbps, 0) << c.what;
  }
}

TEST(NcclTestsOutputTest, TablesThisReaderCannotLayOutReadNoRows) {
  struct Case {
    const char* what;
    std::string header;
    std::string row;  // as many words as the header has columns
  };
  const std::vector<Case> cases = {
      {"no out-of-place busbw",
       "#  size  count  type  redop  root  time  algbw  #wrong  time  algbw  busbw  #wrong",
       "1024  256  float  sum  -1  12.4  0.08  0  12.5  0.08  0.14  0"},
      {"one timing", "#  size  count  type  time  algbw  busbw  #wrong",
       "1024  256  float  12.4  0.08  0.14  0"},
      {"three timings",
       "#  size  count  type  time  algbw  busbw  time  algbw  busbw  time  algbw  busbw",
       "1024  256  float  12.4  0.08  0.14  12.5  0.08  0.14  12.6  0.08  0.14"},
      {"no count",
       "#  size  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong",
       "1024  float  sum  -1  12.4  0.08  0.14  0  12.5  0.08  0.14  0"},
      {"root among the timings",
       "#  size  count  type  redop  time  algbw  busbw  #wrong  root  time  algbw  busbw  #wrong",
       "1024  256  float  sum  12.4  0.08  0.14  0  -1  12.5  0.08  0.14  0"},
      {"busbw twice", "#  size  count  type  time  algbw  busbw  busbw  time  algbw  busbw",
       "1024  256  float  12.4  0.08  0.14  0.14  12.5  0.08  0.14"},
  };
  for (const Case& c : cases) {
    NcclTestsOutput output;
    output.feed(kHeader);
    EXPECT_FALSE(output.feed(c.header));
    EXPECT_FALSE(output.feed(c.row)) << c.what;
    EXPECT_FALSE(output.feed(kRow)) << c.what;  // the earlier table is gone too
    EXPECT_EQ(output.rowsSeen(), 0);
  }
}

TEST(NcclTestsOutputTest, RunHeaderLines) {
  struct Case {
    std::string line;
    int iters;
    int warmup;
  };
  const std::vector<Case> cases = {
      {"# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: "
       "20 "
       "agg iters: 1 validation: 1 graph: 0",
       20, 5},
      {"#  nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: "
       "20 "
       "agg iters: 1 validation: 1 graph: 0",
       20, 5},
      {"# nThread 1 nGpus 8 minBytes 8 maxBytes 8388608 step: 1048576(bytes) warmup iters: 0 "
       "iters: "
       "100 validation: 1 ",  // 2.11: no agg iters, stepping by bytes
       100, 0},
      {"# nThread 2 nGpus 4 minBytes 64 maxBytes 64 step: 2(factor) warmup iters: 3 iters: 1 agg "
       "iters: 7 validation: 1 graph: 1 unalign: 0",
       1, 3},
      {"# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: x iters: y", 0, 0},
      {"# iters: 99 is not the run header", 0, 0},
  };
  for (const Case& c : cases) {
    NcclTestsOutput output;
    EXPECT_FALSE(output.feed(c.line));
    EXPECT_EQ(output.iters(), c.iters) << c.line;
    EXPECT_EQ(output.warmupIters(), c.warmup) << c.line;
  }
}

TEST(NcclTestsOutputTest, FooterLines) {
  struct Case {
    std::string line;
    std::optional<double> average;
    std::optional<int64_t> out_of_bounds;
  };
  const std::vector<Case> cases = {
      {"# Avg bus bandwidth    : 45.6765 ", 45.6765, std::nullopt},
      {"# Avg bus bandwidth    : 45.6765 OK", 45.6765, std::nullopt},
      {"# Avg bus bandwidth    : 0.912 FAILED", 0.912, std::nullopt},
      {"# Avg bus bandwidth    : -nan ", std::nullopt, std::nullopt},  // no rows to average
      {"# Avg bus bandwidth    :", std::nullopt, std::nullopt},
      {"# Out of bounds values : 0 OK", std::nullopt, 0},
      {"# Out of bounds values : 12 FAILED", std::nullopt, 12},
      {" Avg bus bandwidth    : 45.6765 ", std::nullopt, std::nullopt},  // 1.x, no '#'
  };
  for (const Case& c : cases) {
    NcclTestsOutput output;
    EXPECT_FALSE(output.feed(c.line));
    EXPECT_EQ(output.averageBusBandwidthGBps(), c.average) << c.line;
    EXPECT_EQ(output.outOfBoundsValues(), c.out_of_bounds) << c.line;
  }
}

TEST(NcclTestsOutputTest, RanksCountOneRunsDevices) {
  NcclTestsOutput output;
  EXPECT_EQ(output.ranks(), 0);
  output.feed("# Using devices");
  output.feed("#  Rank  0 Group  0 Pid  41235 on dgx-a100-07 device  0 [0000:07:00] NVIDIA A100");
  output.feed("#  Rank  1 Group  0 Pid  41235 on dgx-a100-07 device  1 [0000:0f:00] NVIDIA A100");
  output.feed("#  Rank x Group  0 Pid  41235 on dgx-a100-07 device  1 [0000:0f:00] NVIDIA A100");
  EXPECT_EQ(output.ranks(), 2);
  // The same stream carrying a second run lists its devices again.
  const Parsed twice = [] {
    Parsed p;
    for (int run = 0; run < 2; ++run) {
      for (const std::string& line : fixtureLines("all_reduce_perf_1node_8gpu.txt")) {
        if (auto row = p.output.feed(line)) p.rows.push_back(*row);
      }
    }
    return p;
  }();
  EXPECT_EQ(twice.output.ranks(), 8);
  EXPECT_EQ(twice.rows.size(), 50u);
  EXPECT_EQ(twice.output.rowsSeen(), 50);
}

TEST(NcclTestsOutputTest, SplitRows) {
  const std::string pre = "    67108864      16777216     float     sum      -1";
  const std::string oop = "   631.20  106.32  186.06       0";
  const std::string ip = "   629.86  106.55  186.46       0";
  const std::string warn =
      "gpu-h100-b07:52144:52215 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_3:1 Got async "
      "event : port error";
  const std::string info = "gpu-h100-b07:52144:52144 [0] NCCL INFO AllReduce: opCount 3";
  {
    NcclTestsOutput output;
    output.feed(kHeader);
    EXPECT_FALSE(output.feed(pre));
    EXPECT_FALSE(output.feed(""));
    EXPECT_FALSE(output.feed(warn));
    auto row = output.feed(oop + ip);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->size_bytes, 67108864);
    expectTiming(row->out_of_place, 631.20, 106.32, 186.06, 0);
    expectTiming(row->in_place, 629.86, 106.55, 186.46, 0);
    EXPECT_FALSE(output.feed(ip));  // consumed: no second row from a stray rest
  }
  {
    NcclTestsOutput output;
    output.feed(kHeader);
    EXPECT_FALSE(output.feed(pre + info));
    EXPECT_FALSE(output.feed(info));
    EXPECT_FALSE(output.feed(oop + info));
    auto row = output.feed(ip);
    ASSERT_TRUE(row);
    expectTiming(row->in_place, 629.86, 106.55, 186.46, 0);
    // Glued after a whole row, the row still counts.
    row = output.feed(pre + oop + ip + info);
    ASSERT_TRUE(row);
    EXPECT_EQ(output.rowsSeen(), 2);
  }
  {
    // nccl-tests' own '#' lines never come inside a row: the cut row is dropped.
    NcclTestsOutput output;
    output.feed(kHeader);
    EXPECT_FALSE(output.feed(pre + oop));
    EXPECT_FALSE(output.feed("# Out of bounds values : 0 OK"));
    EXPECT_FALSE(output.feed(ip));
    EXPECT_EQ(output.rowsSeen(), 0);
  }
  {
    // A new row's start replaces a cut one.
    NcclTestsOutput output;
    output.feed(kHeader);
    EXPECT_FALSE(output.feed("    33554432       8388608     float     sum      -1"));
    EXPECT_FALSE(output.feed(pre));
    auto row = output.feed(oop + ip);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->size_bytes, 67108864);
  }
}

TEST(NcclTestsOutputTest, LineEndingsAreTrimmed) {
  NcclTestsOutput output;
  output.feed(std::string(kHeader) + "\r");
  auto row = output.feed(std::string(kRow) + "\r\n");
  ASSERT_TRUE(row);
  EXPECT_EQ(row->in_place.wrong, 0);
  EXPECT_DOUBLE_EQ(row->in_place.busbw_gbps, 186.46);
}

}  // namespace
}  // namespace fabric_chaos::workload
