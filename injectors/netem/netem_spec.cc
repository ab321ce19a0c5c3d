#include "injectors/netem/netem_spec.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <iterator>
#include <string>
#include <string_view>

#include "injectors/model/kind_spec.h"
#include "injectors/model/netem_kind_spec.h"

namespace fabric_chaos::injectors {
namespace {

constexpr double kMaxDelayMs = kNetemMaxDelayMs;
constexpr double kMaxJitterMs = kNetemMaxJitterMs;
constexpr double kMaxRateKbit = kNetemMaxRateKbit;
constexpr double kMaxCount = kNetemMaxCount;

// Plain arrays: no globals with constructors.
constexpr std::string_view kKeys[] = {"delay_ms",
                                      "jitter_ms",
                                      "delay_correlation",
                                      "distribution",
                                      "loss_percent",
                                      "loss_correlation",
                                      "loss_model",
                                      "duplicate_percent",
                                      "duplicate_correlation",
                                      "corrupt_percent",
                                      "corrupt_correlation",
                                      "reorder_percent",
                                      "reorder_correlation",
                                      "reorder_gap",
                                      "rate_kbit",
                                      "limit_packets"};

constexpr std::string_view kDistributions[] = {"uniform", "normal", "pareto", "paretonormal"};

template <size_t N>
bool oneOf(const std::string_view (&set)[N], const std::string& value) {
  return std::find(std::begin(set), std::end(set), value) != std::end(set);
}

// A wrong shape (unknown or missing name, wrong JSON type): 400. A well-typed value netem cannot
// take, alone or with the others, is unacceptableParam's 422.
core::Status malformed(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, param + ": " + problem);
}

std::string range(double low, double high) { return formatNumber(low) + ".." + formatNumber(high); }

// params[name] when present must be a number in [low, high] (or (low, high] when open_low);
// *out keeps its value when absent.
core::Status readNumber(const json& params, const std::string& name, const std::string& param,
                        double low, double high, double* out, bool open_low = false) {
  auto it = params.find(name);
  if (it == params.end()) return core::Status::ok();
  const std::string expected =
      "must be a number in " +
      (open_low ? "(" + formatNumber(low) + ", " + formatNumber(high) + "]" : range(low, high));
  if (!it->is_number()) return malformed(param, expected);
  double value = it->get<double>();
  bool low_ok = open_low ? value > low : value >= low;
  if (!low_ok || !(value <= high)) return unacceptableParam(param, expected);
  *out = value;
  return core::Status::ok();
}

core::Status readNumber(const json& params, const std::string& name, double low, double high,
                        double* out) {
  return readNumber(params, name, name, low, high, out);
}

// An integer in [low, high]; 2.0 counts as an integer, 2.5 does not.
core::Status readInteger(const json& params, const std::string& name, double low, double high,
                         double* out) {
  auto it = params.find(name);
  if (it == params.end()) return core::Status::ok();
  const std::string expected = "must be an integer in " + range(low, high);
  if (!it->is_number() || it->get<double>() != std::floor(it->get<double>())) {
    return malformed(name, expected);
  }
  if (it->get<double>() < low || it->get<double>() > high) return unacceptableParam(name, expected);
  *out = it->get<double>();
  return core::Status::ok();
}

core::Result<sys::GilbertElliott> gilbertElliott(const json& model) {
  if (!model.is_object() || model.size() != 1 || !model.contains("gilbert_elliott")) {
    return malformed("loss_model", "must be {\"gilbert_elliott\": {\"p\", \"r\", \"h\", \"k\"}}");
  }
  const json& ge = model["gilbert_elliott"];
  const std::string prefix = "loss_model.gilbert_elliott";
  if (!ge.is_object()) return malformed(prefix, "must be an object with p, r, h, k (percent)");
  for (const auto& [key, value] : ge.items()) {
    if (key != "p" && key != "r" && key != "h" && key != "k") {
      return malformed(prefix + "." + key, "unknown parameter (expected p, r, h, k)");
    }
  }
  for (const char* required : {"p", "r"}) {
    if (!ge.contains(required)) return malformed(prefix + "." + required, "required (percent)");
  }
  sys::GilbertElliott out;
  FC_RETURN_IF_ERROR(readNumber(ge, "p", prefix + ".p", 0, 100, &out.p, true));
  FC_RETURN_IF_ERROR(readNumber(ge, "r", prefix + ".r", 0, 100, &out.r, true));
  FC_RETURN_IF_ERROR(readNumber(ge, "h", prefix + ".h", 0, 100, &out.h));
  FC_RETURN_IF_ERROR(readNumber(ge, "k", prefix + ".k", 0, 100, &out.k));
  return out;
}

double round6(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

core::Result<sys::NetemSpec> netemSpecFromParams(const json& params) {
  if (!params.is_object()) return malformed("params", "must be an object");
  for (const auto& [key, value] : params.items()) {
    if (!oneOf(kKeys, key)) {
      return malformed(key,
                       "unknown parameter (expected delay_ms, jitter_ms, delay_correlation, "
                       "distribution, loss_percent, loss_correlation, loss_model, "
                       "duplicate_percent, duplicate_correlation, corrupt_percent, "
                       "corrupt_correlation, reorder_percent, reorder_correlation, reorder_gap, "
                       "rate_kbit, limit_packets)");
    }
  }
  sys::NetemSpec spec;
  double delay_ms = 0, jitter_ms = 0;
  FC_RETURN_IF_ERROR(readNumber(params, "delay_ms", 0, kMaxDelayMs, &delay_ms));
  FC_RETURN_IF_ERROR(readNumber(params, "jitter_ms", 0, kMaxJitterMs, &jitter_ms));
  FC_RETURN_IF_ERROR(readNumber(params, "delay_correlation", 0, 100, &spec.delay_correlation));
  spec.delay_us = std::llround(delay_ms * 1000);
  spec.jitter_us = std::llround(jitter_ms * 1000);
  if (spec.jitter_us > 0 && spec.delay_us == 0)
    return unacceptableParam("jitter_ms", "needs delay_ms > 0");
  if (spec.delay_correlation > 0 && spec.jitter_us == 0) {
    return unacceptableParam("delay_correlation", "needs jitter_ms > 0 (it correlates the jitter)");
  }
  auto distribution = params.find("distribution");
  if (distribution != params.end()) {
    const std::string expected = "must be one of uniform, normal, pareto, paretonormal";
    if (!distribution->is_string()) return malformed("distribution", expected);
    if (!oneOf(kDistributions, distribution->get<std::string>())) {
      return unacceptableParam("distribution", expected);
    }
    spec.distribution = distribution->get<std::string>();
    if (spec.distribution != "uniform" && spec.jitter_us == 0) {
      return unacceptableParam("distribution", "needs jitter_ms > 0 (it shapes the jitter)");
    }
  }

  FC_RETURN_IF_ERROR(readNumber(params, "loss_percent", 0, 100, &spec.loss_percent));
  FC_RETURN_IF_ERROR(readNumber(params, "loss_correlation", 0, 100, &spec.loss_correlation));
  if (spec.loss_correlation > 0 && !(spec.loss_percent > 0)) {
    return unacceptableParam("loss_correlation", "needs loss_percent > 0");
  }
  auto model = params.find("loss_model");
  if (model != params.end()) {
    if (params.contains("loss_percent") || params.contains("loss_correlation")) {
      return unacceptableParam("loss_model",
                               "cannot be combined with loss_percent/loss_correlation");
    }
    auto ge = gilbertElliott(*model);
    if (!ge.isOk()) return ge.status();
    spec.gilbert_elliott = *ge;
  }

  FC_RETURN_IF_ERROR(readNumber(params, "duplicate_percent", 0, 100, &spec.duplicate_percent));
  FC_RETURN_IF_ERROR(
      readNumber(params, "duplicate_correlation", 0, 100, &spec.duplicate_correlation));
  if (spec.duplicate_correlation > 0 && !(spec.duplicate_percent > 0)) {
    return unacceptableParam("duplicate_correlation", "needs duplicate_percent > 0");
  }
  FC_RETURN_IF_ERROR(readNumber(params, "corrupt_percent", 0, 100, &spec.corrupt_percent));
  FC_RETURN_IF_ERROR(readNumber(params, "corrupt_correlation", 0, 100, &spec.corrupt_correlation));
  if (spec.corrupt_correlation > 0 && !(spec.corrupt_percent > 0)) {
    return unacceptableParam("corrupt_correlation", "needs corrupt_percent > 0");
  }
  FC_RETURN_IF_ERROR(readNumber(params, "reorder_percent", 0, 100, &spec.reorder_percent));
  FC_RETURN_IF_ERROR(readNumber(params, "reorder_correlation", 0, 100, &spec.reorder_correlation));
  double gap = 0;
  FC_RETURN_IF_ERROR(readInteger(params, "reorder_gap", 1, kMaxCount, &gap));
  spec.reorder_gap = static_cast<uint32_t>(gap);
  if (spec.reorder_percent > 0 && spec.delay_us == 0) {
    return unacceptableParam(
        "reorder_percent",
        "needs delay_ms > 0 (netem reorders by letting some packets skip the delay)");
  }
  if (spec.reorder_correlation > 0 && !(spec.reorder_percent > 0)) {
    return unacceptableParam("reorder_correlation", "needs reorder_percent > 0");
  }
  if (spec.reorder_gap > 0 && !(spec.reorder_percent > 0)) {
    return unacceptableParam("reorder_gap", "needs reorder_percent > 0");
  }

  auto rate = params.find("rate_kbit");
  if (rate != params.end()) {
    const std::string expected = "must be a number in (0, 1e10] (kbit/s, 1 kbit = 1000 bit)";
    if (!rate->is_number()) return malformed("rate_kbit", expected);
    if (!(rate->get<double>() > 0) || rate->get<double>() > kMaxRateKbit) {
      return unacceptableParam("rate_kbit", expected);
    }
    spec.rate_bytes_per_sec =
        std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(rate->get<double>() * 125.0)));
  }
  double limit = 0;
  FC_RETURN_IF_ERROR(readInteger(params, "limit_packets", 1, kMaxCount, &limit));
  spec.limit_packets = static_cast<uint32_t>(limit);

  const bool impaired = spec.delay_us > 0 || spec.loss_percent > 0 || spec.gilbert_elliott ||
                        spec.duplicate_percent > 0 || spec.corrupt_percent > 0 ||
                        spec.reorder_percent > 0 || spec.rate_bytes_per_sec > 0;
  if (!impaired) {
    return unacceptableParam(
        "params",
        "at least one impairment is required (delay_ms, loss_percent, loss_model, "
        "duplicate_percent, corrupt_percent, reorder_percent or rate_kbit above 0)");
  }
  return spec;
}

json netemOptionsJson(const sys::NetemAttributes& a) {
  json out = json::object();
  if (a.latency_ns > 0) out["delay_ms"] = round6(static_cast<double>(a.latency_ns) / 1e6);
  if (a.jitter_ns > 0) out["jitter_ms"] = round6(static_cast<double>(a.jitter_ns) / 1e6);
  if (a.delay_corr > 0) out["delay_correlation"] = sys::netemPercent(a.delay_corr);
  if (a.ge) {
    out["loss_model"] = {{"gilbert_elliott",
                          {{"p", sys::netemPercent(a.ge_p)},
                           {"r", sys::netemPercent(a.ge_r)},
                           {"h", sys::netemPercent(a.ge_h)},
                           {"k", round6(100.0 - sys::netemPercent(a.ge_k1))}}}};
  }
  if (a.loss > 0) out["loss_percent"] = sys::netemPercent(a.loss);
  if (a.loss > 0 && a.loss_corr > 0) out["loss_correlation"] = sys::netemPercent(a.loss_corr);
  if (a.duplicate > 0) out["duplicate_percent"] = sys::netemPercent(a.duplicate);
  if (a.duplicate > 0 && a.dup_corr > 0) {
    out["duplicate_correlation"] = sys::netemPercent(a.dup_corr);
  }
  if (a.corrupt > 0) out["corrupt_percent"] = sys::netemPercent(a.corrupt);
  if (a.corrupt > 0 && a.corrupt_corr > 0) {
    out["corrupt_correlation"] = sys::netemPercent(a.corrupt_corr);
  }
  if (a.reorder > 0 && a.gap > 0) {
    out["reorder_percent"] = sys::netemPercent(a.reorder);
    if (a.reorder_corr > 0) out["reorder_correlation"] = sys::netemPercent(a.reorder_corr);
    out["reorder_gap"] = a.gap;
  }
  if (a.rate_bytes_per_sec > 0) {
    out["rate_kbit"] = round6(static_cast<double>(a.rate_bytes_per_sec) / 125.0);
  }
  if (a.ecn != 0) out["ecn"] = true;
  out["limit_packets"] = a.limit;
  return out;
}

namespace {

std::string toHex(const std::vector<uint8_t>& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

std::optional<std::vector<uint8_t>> fromHex(const std::string& text) {
  if (text.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::vector<uint8_t> out;
  out.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = digit(text[i]);
    int lo = digit(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return out;
}

}  // namespace

json priorJson(const std::optional<sys::SavedQdisc>& saved) {
  if (!saved || saved->isKernelDefault()) {
    return json{{"default", true}, {"kind", saved ? saved->kind : std::string()}};
  }
  json attributes = json::array();
  for (const sys::RawAttribute& attribute : saved->attributes) {
    attributes.push_back({{"type", attribute.type}, {"hex", toHex(attribute.data)}});
  }
  return json{{"default", false},
              {"kind", saved->kind},
              {"handle", sys::formatQdiscHandle(saved->handle)},
              {"attributes", attributes}};
}

core::Result<std::optional<sys::SavedQdisc>> priorFromJson(const json& prior) {
  if (!prior.is_object()) return malformed("prior", "must be an object");
  auto is_default = prior.find("default");
  if (is_default == prior.end() || !is_default->is_boolean()) {
    return malformed("prior.default", "must be true or false");
  }
  if (is_default->get<bool>()) return std::optional<sys::SavedQdisc>();
  sys::SavedQdisc saved;
  auto kind = prior.find("kind");
  if (kind == prior.end() || !kind->is_string() || kind->get<std::string>().empty()) {
    return malformed("prior.kind", "must be a qdisc kind");
  }
  saved.kind = kind->get<std::string>();
  auto handle = prior.find("handle");
  std::optional<uint32_t> parsed;
  if (handle != prior.end() && handle->is_string()) {
    parsed = sys::parseQdiscHandle(handle->get<std::string>());
  }
  if (!parsed || *parsed == 0) return malformed("prior.handle", "must be a handle such as \"1:0\"");
  saved.handle = *parsed;
  auto attributes = prior.find("attributes");
  if (attributes == prior.end() || !attributes->is_array()) {
    return malformed("prior.attributes", "must be an array");
  }
  for (const json& attribute : *attributes) {
    auto type = attribute.find("type");
    auto hex = attribute.find("hex");
    if (!attribute.is_object() || type == attribute.end() || !type->is_number_integer() ||
        type->get<int64_t>() < 0 || type->get<int64_t>() > 0x3fff || hex == attribute.end() ||
        !hex->is_string()) {
      return malformed("prior.attributes", "each must be {\"type\": u16, \"hex\": \"..\"}");
    }
    auto bytes = fromHex(hex->get<std::string>());
    if (!bytes) return malformed("prior.attributes", "'hex' must be an even run of hex digits");
    saved.attributes.push_back(
        sys::RawAttribute{static_cast<uint16_t>(type->get<int64_t>()), std::move(*bytes)});
  }
  return std::optional<sys::SavedQdisc>(std::move(saved));
}

}  // namespace fabric_chaos::injectors
