// sys::NetemSpec -> the values sch_netem receives (NetemAttributes) and their TCA_OPTIONS bytes,
// checked against the kernel's uapi layout; the dump decoder; .dist tables; qdisc handles.
// Pure functions from injectors/sys/qdisc.h, table-driven.
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>

#include <climits>
#include <cstring>
#include <functional>

#include "injectors/sys/qdisc.h"

namespace fabric_chaos::sys {
namespace {

using core::StatusCode;

constexpr uint32_t kQuarter = 0x40000000u;  // netemProbability(25)
constexpr uint32_t kHalf = 0x80000000u;     // netemProbability(50)

struct AttributeCase {
  const char* name;
  std::function<void(NetemSpec&)> setup;
  std::function<void(NetemAttributes&)> expect;  // edits a default NetemAttributes
};

TEST(NetemAttributes, FromSpec) {
  const std::vector<AttributeCase> cases = {
      {"delay: ns in LATENCY64, 64 ns ticks in the qopt", [](NetemSpec& s) { s.delay_us = 50000; },
       [](NetemAttributes& a) {
         a.latency_ns = 50000000;
         a.latency_ticks = 781250;  // 50e6 ns >> 6
       }},
      {"delay, jitter and correlation",
       [](NetemSpec& s) {
         s.delay_us = 100000;
         s.jitter_us = 10000;
         s.delay_correlation = 25;
       },
       [](NetemAttributes& a) {
         a.latency_ns = 100000000;
         a.latency_ticks = 1562500;
         a.jitter_ns = 10000000;
         a.jitter_ticks = 156250;
         a.delay_corr = kQuarter;
       }},
      {"delay correlation without jitter is dropped",
       [](NetemSpec& s) {
         s.delay_us = 1000;
         s.delay_correlation = 25;
       },
       [](NetemAttributes& a) {
         a.latency_ns = 1000000;
         a.latency_ticks = 15625;
       }},
      {"normal distribution with jitter",
       [](NetemSpec& s) {
         s.delay_us = 10000;
         s.jitter_us = 1000;
         s.distribution = "normal";
       },
       [](NetemAttributes& a) {
         a.latency_ns = 10000000;
         a.latency_ticks = 156250;
         a.jitter_ns = 1000000;
         a.jitter_ticks = 15625;
         a.distribution = "normal";
       }},
      {"uniform is netem's built-in: no table",
       [](NetemSpec& s) {
         s.delay_us = 10000;
         s.jitter_us = 1000;
         s.distribution = "uniform";
       },
       [](NetemAttributes& a) {
         a.latency_ns = 10000000;
         a.latency_ticks = 156250;
         a.jitter_ns = 1000000;
         a.jitter_ticks = 15625;
       }},
      {"60 s fits the u32 ticks", [](NetemSpec& s) { s.delay_us = 60000000; },
       [](NetemAttributes& a) {
         a.latency_ns = 60000000000;
         a.latency_ticks = 937500000;
       }},
      {"ticks clamp at UINT32_MAX, ns carry the truth",
       [](NetemSpec& s) { s.delay_us = 300000000000; },
       [](NetemAttributes& a) {
         a.latency_ns = 300000000000000;
         a.latency_ticks = UINT32_MAX;
       }},
      {"random loss with correlation",
       [](NetemSpec& s) {
         s.loss_percent = 10;
         s.loss_correlation = 25;
       },
       [](NetemAttributes& a) {
         a.loss = 429496730;  // round(0.1 * 0xffffffff)
         a.loss_corr = kQuarter;
       }},
      {"loss correlation without loss is dropped", [](NetemSpec& s) { s.loss_correlation = 25; },
       [](NetemAttributes&) {}},
      {"100% loss is 0xffffffff", [](NetemSpec& s) { s.loss_percent = 100; },
       [](NetemAttributes& a) { a.loss = UINT32_MAX; }},
      {"Gilbert-Elliott: h as is, k1 = 1 - k",
       [](NetemSpec& s) {
         s.loss_percent = 10;  // ignored: the model replaces random loss
         s.gilbert_elliott = GilbertElliott{25, 50, 25, 75};
       },
       [](NetemAttributes& a) {
         a.ge = true;
         a.ge_p = kQuarter;
         a.ge_r = kHalf;
         a.ge_h = kQuarter;
         a.ge_k1 = kQuarter;
       }},
      {"simple Gilbert: bad state loses everything",
       [](NetemSpec& s) {
         s.gilbert_elliott = GilbertElliott{5, 50, 0, 100};
       },
       [](NetemAttributes& a) {
         a.ge = true;
         a.ge_p = netemProbability(5);
         a.ge_r = kHalf;
         a.ge_h = 0;
         a.ge_k1 = 0;
       }},
      {"duplicate and corrupt",
       [](NetemSpec& s) {
         s.duplicate_percent = 50;
         s.duplicate_correlation = 25;
         s.corrupt_percent = 25;
         s.corrupt_correlation = 50;
       },
       [](NetemAttributes& a) {
         a.duplicate = kHalf;
         a.dup_corr = kQuarter;
         a.corrupt = kQuarter;
         a.corrupt_corr = kHalf;
       }},
      {"reorder without gap uses gap 1 (gap 0 never reorders)",
       [](NetemSpec& s) {
         s.delay_us = 10000;
         s.reorder_percent = 25;
         s.reorder_correlation = 50;
       },
       [](NetemAttributes& a) {
         a.latency_ns = 10000000;
         a.latency_ticks = 156250;
         a.reorder = kQuarter;
         a.reorder_corr = kHalf;
         a.gap = 1;
       }},
      {"reorder gap",
       [](NetemSpec& s) {
         s.delay_us = 10000;
         s.reorder_percent = 25;
         s.reorder_gap = 5;
       },
       [](NetemAttributes& a) {
         a.latency_ns = 10000000;
         a.latency_ticks = 156250;
         a.reorder = kQuarter;
         a.gap = 5;
       }},
      {"gap without reorder is dropped", [](NetemSpec& s) { s.reorder_gap = 5; },
       [](NetemAttributes&) {}},
      {"rate in bytes per second", [](NetemSpec& s) { s.rate_bytes_per_sec = 1000000; },
       [](NetemAttributes& a) { a.rate_bytes_per_sec = 1000000; }},
      {"limit", [](NetemSpec& s) { s.limit_packets = 5; }, [](NetemAttributes& a) { a.limit = 5; }},
  };
  for (const AttributeCase& c : cases) {
    SCOPED_TRACE(c.name);
    NetemSpec spec;
    c.setup(spec);
    NetemAttributes want;
    c.expect(want);
    EXPECT_EQ(netemAttributes(spec), want);
  }
}

TEST(NetemAttributes, ProbabilityScale) {
  EXPECT_EQ(netemProbability(0), 0u);
  EXPECT_EQ(netemProbability(100), 0xffffffffu);
  EXPECT_EQ(netemProbability(25), kQuarter);
  for (double percent : {0.0, 0.001, 1.0, 10.0, 12.5, 33.333333, 99.999, 100.0}) {
    EXPECT_DOUBLE_EQ(netemPercent(netemProbability(percent)), percent) << percent;
  }
}

TEST(NetemAttributes, ValidateNamesTheField) {
  struct Case {
    std::function<void(NetemSpec&)> setup;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {[](NetemSpec& s) { s.loss_percent = 101; }, "netem loss must be in 0..100%"},
           {[](NetemSpec& s) { s.reorder_correlation = -1; }, "netem reorder correlation must"},
           {[](NetemSpec& s) {
              s.gilbert_elliott = GilbertElliott{1, 200, 0, 100};
            },
            "netem Gilbert-Elliott r must"},
           {[](NetemSpec& s) { s.delay_us = -1; }, "netem delay must be in 0.."},
           {[](NetemSpec& s) { s.jitter_us = 3000000; }, "netem jitter must be in 0..2147483 us"},
           {[](NetemSpec& s) { s.distribution = "../../etc/x"; }, "netem distribution '../"},
       }) {
    NetemSpec spec;
    c.setup(spec);
    core::Status status = validateNetemSpec(spec);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message().rfind(c.error, 0), 0u) << status.message();
  }
  NetemSpec experimental;
  experimental.distribution = "experimental";
  EXPECT_TRUE(validateNetemSpec(experimental).isOk());
}

// --- TCA_OPTIONS bytes ---

struct Attr {
  uint16_t type;  // with flags
  std::vector<uint8_t> payload;
};

// tc_netem_qopt, then the attributes in order.
std::vector<Attr> attributesOf(const std::vector<uint8_t>& options, tc_netem_qopt* qopt) {
  EXPECT_GE(options.size(), sizeof(tc_netem_qopt));
  std::memcpy(qopt, options.data(), sizeof(*qopt));
  std::vector<Attr> out;
  size_t offset = NLA_ALIGN(sizeof(tc_netem_qopt));
  while (offset + 4 <= options.size()) {
    uint16_t len = 0;
    uint16_t type = 0;
    std::memcpy(&len, options.data() + offset, 2);
    std::memcpy(&type, options.data() + offset + 2, 2);
    EXPECT_GE(len, 4);
    EXPECT_LE(offset + len, options.size());
    if (len < 4 || offset + len > options.size()) break;
    out.push_back(
        {type, std::vector<uint8_t>(options.begin() + offset + 4, options.begin() + offset + len)});
    offset += NLA_ALIGN(len);
  }
  EXPECT_EQ(offset, options.size()) << "attributes end on a 4-byte boundary";
  return out;
}

std::vector<uint16_t> typesOf(const std::vector<Attr>& attrs) {
  std::vector<uint16_t> out;
  for (const Attr& a : attrs) out.push_back(a.type);
  return out;
}

template <typename T>
T as(const Attr& attr) {
  T value{};
  EXPECT_EQ(attr.payload.size(), sizeof(T));
  std::memcpy(&value, attr.payload.data(), std::min(sizeof(T), attr.payload.size()));
  return value;
}

TEST(NetemOptionsEncoding, QoptThenEveryBlockSoAChangeClearsOldValues) {
  NetemSpec spec;
  spec.delay_us = 50000;
  spec.jitter_us = 5000;
  spec.delay_correlation = 25;
  spec.loss_percent = 50;
  spec.duplicate_percent = 25;
  spec.reorder_percent = 25;
  spec.reorder_gap = 3;
  spec.rate_bytes_per_sec = 1000000;
  spec.limit_packets = 1234;
  tc_netem_qopt qopt{};
  auto attrs = attributesOf(encodeNetemOptions(netemAttributes(spec)), &qopt);
  EXPECT_EQ(qopt.latency, 781250u);
  EXPECT_EQ(qopt.limit, 1234u);
  EXPECT_EQ(qopt.loss, kHalf);
  EXPECT_EQ(qopt.gap, 3u);
  EXPECT_EQ(qopt.duplicate, kQuarter);
  EXPECT_EQ(qopt.jitter, 78125u);
  ASSERT_EQ(
      typesOf(attrs),
      (std::vector<uint16_t>{TCA_NETEM_LATENCY64, TCA_NETEM_JITTER64, TCA_NETEM_CORR,
                             TCA_NETEM_REORDER, TCA_NETEM_CORRUPT, TCA_NETEM_RATE, TCA_NETEM_ECN}));
  EXPECT_EQ(as<int64_t>(attrs[0]), 50000000);
  EXPECT_EQ(as<int64_t>(attrs[1]), 5000000);
  auto corr = as<tc_netem_corr>(attrs[2]);
  EXPECT_EQ(corr.delay_corr, kQuarter);
  EXPECT_EQ(corr.loss_corr, 0u);
  EXPECT_EQ(corr.dup_corr, 0u);
  auto reorder = as<tc_netem_reorder>(attrs[3]);
  EXPECT_EQ(reorder.probability, kQuarter);
  auto corrupt = as<tc_netem_corrupt>(attrs[4]);
  EXPECT_EQ(corrupt.probability, 0u) << "sent as zero so that a change clears it";
  auto rate = as<tc_netem_rate>(attrs[5]);
  EXPECT_EQ(rate.rate, 1000000u);
  EXPECT_EQ(rate.packet_overhead, 0);
  EXPECT_EQ(as<uint32_t>(attrs[6]), 0u);
}

TEST(NetemOptionsEncoding, Rate64AboveFourGigabytesPerSecond) {
  NetemSpec spec;
  spec.rate_bytes_per_sec = 50000000000ULL;  // 400 Gbit/s
  tc_netem_qopt qopt{};
  auto attrs = attributesOf(encodeNetemOptions(netemAttributes(spec)), &qopt);
  ASSERT_EQ(typesOf(attrs),
            (std::vector<uint16_t>{TCA_NETEM_LATENCY64, TCA_NETEM_JITTER64, TCA_NETEM_CORR,
                                   TCA_NETEM_REORDER, TCA_NETEM_CORRUPT, TCA_NETEM_RATE64,
                                   TCA_NETEM_RATE, TCA_NETEM_ECN}));
  EXPECT_EQ(as<uint64_t>(attrs[5]), 50000000000ULL);
  EXPECT_EQ(as<tc_netem_rate>(attrs[6]).rate, UINT32_MAX);
  // Just below 2^32 stays in the 32-bit field.
  spec.rate_bytes_per_sec = 0xffffffffULL;
  attrs = attributesOf(encodeNetemOptions(netemAttributes(spec)), &qopt);
  EXPECT_EQ(attrs.size(), 7u);
  EXPECT_EQ(as<tc_netem_rate>(attrs[5]).rate, 0xffffffffu);
}

TEST(NetemOptionsEncoding, GilbertElliottIsANestedLossAttribute) {
  NetemSpec spec;
  spec.gilbert_elliott = GilbertElliott{25, 50, 25, 75};
  tc_netem_qopt qopt{};
  auto attrs = attributesOf(encodeNetemOptions(netemAttributes(spec)), &qopt);
  EXPECT_EQ(qopt.loss, 0u);
  ASSERT_EQ(attrs.size(), 8u);
  EXPECT_EQ(attrs[7].type, TCA_NETEM_LOSS | NLA_F_NESTED);
  ASSERT_EQ(attrs[7].payload.size(), 4 + sizeof(tc_netem_gemodel));
  uint16_t inner_len = 0, inner_type = 0;
  std::memcpy(&inner_len, attrs[7].payload.data(), 2);
  std::memcpy(&inner_type, attrs[7].payload.data() + 2, 2);
  EXPECT_EQ(inner_type, NETEM_LOSS_GE);
  EXPECT_EQ(inner_len, 4 + sizeof(tc_netem_gemodel));
  tc_netem_gemodel ge{};
  std::memcpy(&ge, attrs[7].payload.data() + 4, sizeof(ge));
  EXPECT_EQ(ge.p, kQuarter);
  EXPECT_EQ(ge.r, kHalf);
  EXPECT_EQ(ge.h, kQuarter);
  EXPECT_EQ(ge.k1, kQuarter);
}

TEST(NetemOptionsEncoding, DelayTableIsTheLastAttribute) {
  NetemSpec spec;
  spec.delay_us = 10000;
  spec.jitter_us = 1000;
  spec.distribution = "normal";
  const std::vector<int16_t> table = {-3, 0, 7};
  tc_netem_qopt qopt{};
  auto attrs = attributesOf(encodeNetemOptions(netemAttributes(spec), table), &qopt);
  ASSERT_EQ(attrs.back().type, TCA_NETEM_DELAY_DIST);
  ASSERT_EQ(attrs.back().payload.size(), 6u);
  int16_t values[3];
  std::memcpy(values, attrs.back().payload.data(), 6);
  EXPECT_EQ(values[0], -3);
  EXPECT_EQ(values[2], 7);
}

TEST(NetemOptionsDecoding, RoundTrips) {
  std::vector<std::function<void(NetemSpec&)>> setups = {
      [](NetemSpec& s) { s.delay_us = 50000; },
      [](NetemSpec& s) {
        s.delay_us = 100000;
        s.jitter_us = 20000;
        s.delay_correlation = 10;
        s.loss_percent = 1;
        s.loss_correlation = 2;
        s.duplicate_percent = 3;
        s.duplicate_correlation = 4;
        s.corrupt_percent = 5;
        s.corrupt_correlation = 6;
        s.reorder_percent = 7;
        s.reorder_correlation = 8;
        s.reorder_gap = 9;
        s.rate_bytes_per_sec = 125000;
        s.limit_packets = 77;
      },
      [](NetemSpec& s) {
        s.gilbert_elliott = GilbertElliott{1, 2, 3, 4};
      },
      [](NetemSpec& s) { s.rate_bytes_per_sec = 1ULL << 40; },
  };
  for (size_t i = 0; i < setups.size(); ++i) {
    NetemSpec spec;
    setups[i](spec);
    NetemAttributes sent = netemAttributes(spec);
    auto decoded = decodeNetemOptions(encodeNetemOptions(sent));
    ASSERT_TRUE(decoded.isOk()) << i << ": " << decoded.status().toString();
    EXPECT_EQ(*decoded, sent) << i;
  }
}

TEST(NetemOptionsDecoding, OldKernelsWithoutNanoseconds) {
  tc_netem_qopt qopt{};
  qopt.latency = 781250;
  qopt.jitter = 100;
  qopt.limit = 1000;
  std::vector<uint8_t> options(sizeof(qopt));
  std::memcpy(options.data(), &qopt, sizeof(qopt));
  auto decoded = decodeNetemOptions(options);
  ASSERT_TRUE(decoded.isOk());
  EXPECT_EQ(decoded->latency_ns, 50000000);
  EXPECT_EQ(decoded->jitter_ns, 6400);
}

TEST(NetemOptionsDecoding, RejectsTruncation) {
  EXPECT_EQ(decodeNetemOptions({1, 2, 3}).status().code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> options = encodeNetemOptions(NetemAttributes{});
  options[sizeof(tc_netem_qopt)] = 200;  // first attribute claims 200 bytes
  EXPECT_EQ(decodeNetemOptions(options).status().code(), StatusCode::kInvalidArgument);
}

// --- .dist tables ---

TEST(NetemDistTable, ParsesIproute2Format) {
  auto table = parseNetemDistTable(
      "# This is the distribution table for the normal distribution.\n"
      "\n"
      " -32768 -28000 0x10\n"
      "# another comment\n"
      "1 2\t3   32767\n");
  ASSERT_TRUE(table.isOk()) << table.status().toString();
  EXPECT_EQ(*table, (std::vector<int16_t>{-32768, -28000, 16, 1, 2, 3, 32767}));
}

TEST(NetemDistTable, Errors) {
  EXPECT_EQ(parseNetemDistTable("").status().message(), "distribution table is empty");
  EXPECT_EQ(parseNetemDistTable("# only\n").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parseNetemDistTable("1 2\n3 40000\n").status().message(),
            "distribution table line 2: '40000' is not a 16-bit integer");
  EXPECT_EQ(parseNetemDistTable("1 x2\n").status().message(),
            "distribution table line 1: 'x2' is not a 16-bit integer");
  std::string big;
  for (int i = 0; i < 16385; ++i) big += "1 ";
  EXPECT_EQ(parseNetemDistTable(big).status().message(),
            "distribution table has more than 16384 values");
}

TEST(NetemDistTable, SearchPathPutsMultiarchFirstAndNeverTheWorkingDirectory) {
  auto dirs = netemDistributionDirs();
  ASSERT_FALSE(dirs.empty());
#if defined(__x86_64__)
  EXPECT_EQ(dirs[0], "/usr/lib/x86_64-linux-gnu/tc");
#endif
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), "/usr/lib/tc"), dirs.end());
  for (const std::string& dir : dirs) EXPECT_EQ(dir[0], '/') << dir;
}

// --- handles ---

TEST(QdiscHandle, FormatAndParse) {
  EXPECT_EQ(formatQdiscHandle(0x80010000U), "8001:0");
  EXPECT_EQ(formatQdiscHandle(0x10000U), "1:0");
  EXPECT_EQ(formatQdiscHandle(0), "0:0");
  EXPECT_EQ(formatQdiscHandle(TC_H_INGRESS), "ffff:fff1");
  EXPECT_EQ(parseQdiscHandle("8001:"), 0x80010000U);
  EXPECT_EQ(parseQdiscHandle("8001:0"), 0x80010000U);
  EXPECT_EQ(parseQdiscHandle("1:"), 0x10000U);
  EXPECT_EQ(parseQdiscHandle("FFFF:fff1"), TC_H_INGRESS);
  for (const char* bad : {"", "1", ":1", "x:", "12345:", "1:12345", "1:g"}) {
    EXPECT_FALSE(parseQdiscHandle(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace fabric_chaos::sys
