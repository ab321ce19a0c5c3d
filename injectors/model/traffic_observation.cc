#include "injectors/model/traffic_observation.h"

namespace fabric_chaos::injectors {

using nlohmann::json;

double jainFairnessIndex(const std::vector<double>& shares) {
  double sum = 0;
  double squares = 0;
  for (double share : shares) {
    sum += share;
    squares += share * share;
  }
  if (shares.empty() || squares <= 0) return 1.0;
  return sum * sum / (static_cast<double>(shares.size()) * squares);
}

json mergeTrafficObservations(const json& whole, const json& part) {
  if (!part.is_object()) return whole;
  if (!whole.is_object() || whole.empty()) return part;
  json out = whole;
  for (const char* list : {"sources", "source_bytes", "source_goodput_mbps"}) {
    json merged = out.value(list, json::array());
    if (!merged.is_array()) merged = json::array();
    for (const json& item : part.value(list, json::array())) merged.push_back(item);
    out[list] = std::move(merged);
  }
  out["running"] = whole.value("running", true) && part.value("running", true);
  for (auto it = part.begin(); it != part.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();  // sink, exit_code, log, path
  }
  std::vector<double> bytes;
  for (const json& b : out["source_bytes"]) bytes.push_back(b.is_number() ? b.get<double>() : 0);
  out["jain_fairness"] = jainFairnessIndex(bytes);
  return out;
}

}  // namespace fabric_chaos::injectors
