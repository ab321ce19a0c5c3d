#include "lab/port_model.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <set>

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;

constexpr int64_t kMinRateBps = 1'000'000;
constexpr int64_t kMaxRateBps = 100'000'000'000;
constexpr int64_t kMinBufferBytes = 2 * 1514;
constexpr int64_t kMaxBufferBytes = int64_t{64} << 20;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Leading digits of `text` as a number and the rest as its unit; false without digits or on
// overflow.
bool splitNumber(const std::string& text, int64_t& number, std::string& unit) {
  const char* end = text.data() + text.size();
  const auto parsed = std::from_chars(text.data(), end, number);
  if (parsed.ec != std::errc() || parsed.ptr == text.data() || number < 0) return false;
  unit = lower(std::string(parsed.ptr, end));
  return true;
}

bool multiply(int64_t value, int64_t scale, int64_t& out) {
  if (value > INT64_MAX / scale) return false;
  out = value * scale;
  return true;
}

std::string humanRate(int64_t bps) {
  if (bps % 1'000'000'000 == 0) return std::to_string(bps / 1'000'000'000) + " Gbit/s";
  if (bps % 1'000'000 == 0) return std::to_string(bps / 1'000'000) + " Mbit/s";
  if (bps % 1'000 == 0) return std::to_string(bps / 1'000) + " kbit/s";
  return std::to_string(bps) + " bit/s";
}

std::string humanSize(int64_t bytes) {
  if (bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

core::Result<int64_t> parseLinkRate(const std::string& text) {
  int64_t number = 0;
  std::string unit;
  const std::string usage = "--link-rate \"" + text +
                            "\" is not a rate; write it as tc does, e.g. 100mbit, 1gbit, 25gbit";
  if (!splitNumber(text, number, unit)) return invalid(usage);
  int64_t scale = 0;
  if (unit.empty() || unit == "bit") scale = 1;
  if (unit == "kbit") scale = 1'000;
  if (unit == "mbit") scale = 1'000'000;
  if (unit == "gbit") scale = 1'000'000'000;
  int64_t bps = 0;
  if (scale == 0 || !multiply(number, scale, bps)) return invalid(usage);
  return bps;
}

core::Result<int64_t> parseBufferSize(const std::string& text) {
  int64_t number = 0;
  std::string unit;
  const std::string usage =
      "--buffer \"" + text + "\" is not a size; write it as tc does, e.g. 64k, 512kb, 2m";
  if (!splitNumber(text, number, unit)) return invalid(usage);
  int64_t scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kb") scale = 1024;
  if (unit == "m" || unit == "mb") scale = int64_t{1} << 20;
  int64_t bytes = 0;
  if (scale == 0 || !multiply(number, scale, bytes)) return invalid(usage);
  return bytes;
}

core::Result<std::vector<int>> parseDscpList(const std::string& text) {
  std::vector<int> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int value = -1;
    const auto parsed = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || parsed.ec != std::errc() || parsed.ptr != item.data() + item.size() ||
        value < 0 || value > 63) {
      return invalid("--lossless-dscp \"" + text +
                     "\" must be DSCP values 0-63 separated by commas, e.g. 26 or 26,24");
    }
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      return invalid("--lossless-dscp lists " + std::to_string(value) + " twice");
    }
    values.push_back(value);
    start = comma + 1;
  }
  return values;
}

Status checkEgressModel(const scenarios::EgressModel& model) {
  if (model.rate_bps < kMinRateBps || model.rate_bps > kMaxRateBps) {
    return invalid("--link-rate must be between 1mbit and 100gbit, got " +
                   humanRate(model.rate_bps));
  }
  if (model.buffer_bytes < kMinBufferBytes || model.buffer_bytes > kMaxBufferBytes) {
    return invalid("--buffer must be between " + std::to_string(kMinBufferBytes) +
                   " bytes (two full frames) and 64m, got " + std::to_string(model.buffer_bytes) +
                   " bytes");
  }
  std::set<int> seen;
  for (int dscp : model.lossless_dscp) {
    if (dscp < 0 || dscp > 63 || !seen.insert(dscp).second) {
      return invalid("--lossless-dscp must list distinct DSCP values 0-63");
    }
  }
  return Status::ok();
}

std::vector<std::vector<std::string>> egressCommands(const std::string& netns,
                                                     const std::string& ifname,
                                                     const scenarios::EgressModel& model) {
  const std::string line = std::to_string(model.rate_bps) + "bit";
  const std::string half = std::to_string(model.rate_bps / 2) + "bit";
  const std::string limit = std::to_string(model.buffer_bytes);
  // Two milliseconds of line rate (at least one full frame) may go out back to back. With tc's
  // default (one frame), a qdisc timer that fires late on a loaded machine loses the time it was
  // late: one TCP flow through a 100 Mbit/s port got 81-89 Mbit/s in CI instead of 95.
  const std::string burst = std::to_string(std::max<int64_t>(1600, model.rate_bps / 8 / 500));
  std::vector<std::vector<std::string>> commands = {
      {"-n", netns, "qdisc", "replace", "dev", ifname, "root", "handle", "1:", "htb", "default",
       "20"},
      {"-n", netns, "class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate",
       line, "ceil", line, "burst", burst, "cburst", burst},
      {"-n",   netns, "class", "add", "dev",   ifname, "parent", "1:1", "classid", "1:10", "htb",
       "rate", half,  "ceil",  line,  "burst", burst,  "cburst", burst, "prio",    "0"},
      {"-n",   netns, "class", "add", "dev",   ifname, "parent", "1:1", "classid", "1:20", "htb",
       "rate", half,  "ceil",  line,  "burst", burst,  "cburst", burst, "prio",    "1"},
      {"-n", netns, "qdisc", "add", "dev", ifname, "parent", "1:10", "handle", "10:", "bfifo",
       "limit", limit},
      {"-n", netns, "qdisc", "add", "dev", ifname, "parent", "1:20", "handle", "20:", "bfifo",
       "limit", limit},
  };
  for (int dscp : model.lossless_dscp) {
    // The DS field is the upper six bits of the old TOS byte: DSCP 26 is 0x68 under mask 0xfc.
    char tos[8];
    std::snprintf(tos, sizeof(tos), "0x%02x", dscp << 2);
    commands.push_back({"-n", netns,      "filter", "add",  "dev",    ifname, "parent",
                        "1:", "protocol", "ip",     "prio", "1",      "u32",  "match",
                        "ip", "dsfield",  tos,      "0xfc", "flowid", "1:10"});
  }
  return commands;
}

std::string describeEgress(const scenarios::EgressModel& model) {
  std::string dscp;
  for (int value : model.lossless_dscp) dscp += (dscp.empty() ? "" : ",") + std::to_string(value);
  return humanRate(model.rate_bps) + ", " + humanSize(model.buffer_bytes) +
         " per class, lossless DSCP " + (dscp.empty() ? "none" : dscp);
}

}  // namespace fabric_chaos::lab
