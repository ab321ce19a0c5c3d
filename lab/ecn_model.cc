#include "lab/ecn_model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "injectors/sys/ecn_marker_abi.h"
#include "lab/port_model.h"

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

std::string humanSize(int64_t bytes) {
  if (bytes % (int64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

}  // namespace

core::Result<scenarios::EcnMarking> parseEcnMarking(const std::string& text) {
  const std::string usage = "--ecn \"" + text +
                            "\" must be KMIN,KMAX,PMAX: two backlog sizes in tc units and a "
                            "probability, e.g. 20k,80k,0.2";
  const std::vector<std::string> items = splitCommas(text);
  if (items.size() != 3) return invalid(usage);
  scenarios::EcnMarking marking;
  auto kmin = parseBufferSize(items[0]);
  auto kmax = parseBufferSize(items[1]);
  if (!kmin.isOk() || !kmax.isOk()) return invalid(usage);
  marking.kmin_bytes = *kmin;
  marking.kmax_bytes = *kmax;
  const std::string& pmax = items[2];
  char* end = nullptr;
  marking.pmax = pmax.empty() || std::isspace(static_cast<unsigned char>(pmax[0]))
                     ? NAN
                     : std::strtod(pmax.c_str(), &end);
  if (end != pmax.c_str() + pmax.size() || !std::isfinite(marking.pmax)) return invalid(usage);
  return marking;
}

Status checkEcnMarking(const scenarios::EgressModel& model) {
  if (!model.ecn) return Status::ok();
  const scenarios::EcnMarking& ecn = *model.ecn;
  if (ecn.kmin_bytes <= 0 || ecn.kmin_bytes >= ecn.kmax_bytes) {
    return invalid("--ecn needs 0 < KMIN < KMAX, got KMIN " + std::to_string(ecn.kmin_bytes) +
                   " and KMAX " + std::to_string(ecn.kmax_bytes) + " bytes");
  }
  if (ecn.kmax_bytes > model.buffer_bytes) {
    return invalid("--ecn KMAX (" + std::to_string(ecn.kmax_bytes) +
                   " bytes) must not exceed the buffer (--buffer, " +
                   std::to_string(model.buffer_bytes) +
                   " bytes): a backlog above the buffer never exists");
  }
  if (!(ecn.pmax > 0 && ecn.pmax <= 1)) {
    return invalid("--ecn PMAX must be a probability in (0, 1], got " + std::to_string(ecn.pmax));
  }
  return Status::ok();
}

uint64_t fixedProbability(double probability) {
  if (!(probability > 0)) return 0;
  if (probability >= 1) return sys::kEcnProbabilityOne;
  return static_cast<uint64_t>(std::llround(probability * sys::kEcnProbabilityOne));
}

double markProbability(const scenarios::EcnMarking& marking, int64_t backlog_bytes) {
  if (backlog_bytes < 0) backlog_bytes = 0;
  const fc_u64 fixed = fc_ecn_mark_probability(
      static_cast<fc_u64>(backlog_bytes), static_cast<fc_u64>(marking.kmin_bytes),
      static_cast<fc_u64>(marking.kmax_bytes), fixedProbability(marking.pmax));
  return static_cast<double>(fixed) / static_cast<double>(sys::kEcnProbabilityOne);
}

sys::EcnMarkerConfig ecnMarkerConfig(const scenarios::EgressModel& model) {
  sys::EcnMarkerConfig config;
  config.rate_bps = model.rate_bps;
  config.buffer_bytes = model.buffer_bytes;
  if (model.ecn) {
    config.kmin_bytes = model.ecn->kmin_bytes;
    config.kmax_bytes = model.ecn->kmax_bytes;
    config.pmax = fixedProbability(model.ecn->pmax);
  }
  for (int dscp : model.lossless_dscp) {
    if (dscp >= 0 && dscp < 64) config.lossless_dscp_mask |= uint64_t{1} << dscp;
  }
  return config;
}

std::string describeEcn(const scenarios::EcnMarking& marking) {
  char pmax[32];
  std::snprintf(pmax, sizeof(pmax), "%g %%", marking.pmax * 100);
  return "CE on ECT packets from " + humanSize(marking.kmin_bytes) + " to " +
         humanSize(marking.kmax_bytes) + " of class backlog, up to " + pmax + ", all above";
}

}  // namespace fabric_chaos::lab
