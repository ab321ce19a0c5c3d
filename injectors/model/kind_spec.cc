#include "injectors/model/kind_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "injectors/model/hot_spot_spec.h"
#include "injectors/model/ib_fault_specs.h"
#include "injectors/model/incast_spec.h"
#include "injectors/model/link_flap_spec.h"
#include "injectors/model/netem_kind_spec.h"
#include "injectors/model/packet_loss_spec.h"
#include "injectors/model/pfc_config_spec.h"
#include "injectors/model/pfc_storm_spec.h"
#include "injectors/model/pfc_watchdog_spec.h"
#include "injectors/model/rdma_device_specs.h"
#include "injectors/model/verbs_fault_specs.h"

namespace fabric_chaos::injectors {
namespace {

// The document's shape is wrong: not an object, an unknown or missing name, a value of the wrong
// JSON type (400).
core::Status malformed(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, param + ": " + problem);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool inRange(const ParamSpec& param, double v) {
  if (param.min) {
    if (param.min_exclusive ? !(v > *param.min) : !(v >= *param.min)) return false;
  }
  return !param.max || v <= *param.max;
}

}  // namespace

core::Status unacceptableParam(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kUnprocessable, param + ": " + problem);
}

core::Status checkParamValue(const ParamSpec& param, const json& value) {
  const std::string range = describeRange(param);
  switch (param.type) {
    case ParamType::kInteger: {
      const std::string expected = "must be an integer" + (range.empty() ? "" : " in " + range);
      if (value.is_number_unsigned()) {
        // Above int64: out of any range we declare.
        if (value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
          return unacceptableParam(param.name, expected);
        }
      } else if (!value.is_number_integer()) {
        return malformed(param.name, expected);
      }
      if (!inRange(param, static_cast<double>(value.get<int64_t>()))) {
        return unacceptableParam(param.name, expected);
      }
      return core::Status::ok();
    }
    case ParamType::kNumber: {
      const std::string expected = "must be a number" + (range.empty() ? "" : " in " + range);
      if (!value.is_number()) return malformed(param.name, expected);
      if (!inRange(param, value.get<double>())) return unacceptableParam(param.name, expected);
      return core::Status::ok();
    }
    case ParamType::kBoolean:
      if (!value.is_boolean()) return malformed(param.name, "must be true or false");
      return core::Status::ok();
    case ParamType::kChoice: {
      const std::string expected = "must be one of " + joined(param.choices);
      if (!value.is_string()) return malformed(param.name, expected);
      if (std::find(param.choices.begin(), param.choices.end(), value.get<std::string>()) ==
          param.choices.end()) {
        return unacceptableParam(param.name, expected);
      }
      return core::Status::ok();
    }
    case ParamType::kObject:
      if (!value.is_object()) return malformed(param.name, "must be an object");
      return core::Status::ok();
    case ParamType::kIntegerList: {
      const std::string expected =
          "must be a non-empty list of distinct integers" + (range.empty() ? "" : " in " + range);
      if (!value.is_array()) return malformed(param.name, expected);
      if (value.empty()) return unacceptableParam(param.name, expected);
      std::vector<int64_t> seen;
      for (const json& item : value) {
        if (!item.is_number_integer()) return malformed(param.name, expected);
        if (!inRange(param, static_cast<double>(item.get<int64_t>())) ||
            std::find(seen.begin(), seen.end(), item.get<int64_t>()) != seen.end()) {
          return unacceptableParam(param.name, expected);
        }
        seen.push_back(item.get<int64_t>());
      }
      return core::Status::ok();
    }
  }
  return core::Status::ok();
}

const ParamSpec* KindSpec::param(std::string_view name) const {
  for (const ParamSpec& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const std::vector<const KindSpec*>& kindSpecs() {
  static const std::vector<const KindSpec*> specs = [] {
    std::vector<const KindSpec*> all{&hotSpotSpec(),   &ibLinkDownSpec(),  &ibLinkFlapSpec(),
                                     &ibMadLossSpec(), &incastSpec(),      &linkFlapSpec(),
                                     &netemKindSpec(), &packetLossSpec(),  &pfcConfigSpec(),
                                     &pfcStormSpec(),  &pfcWatchdogSpec(), &smFailoverSpec()};
    for (VerbsFaultKind kind : kVerbsFaultKinds) all.push_back(&verbsFaultSpec(kind));
    for (RdmaDeviceFaultKind kind : kRdmaDeviceFaultKinds) {
      all.push_back(&rdmaDeviceFaultSpec(kind));
    }
    std::sort(all.begin(), all.end(),
              [](const KindSpec* a, const KindSpec* b) { return a->kind < b->kind; });
    return all;
  }();
  return specs;
}

const KindSpec* findKindSpec(std::string_view kind) {
  for (const KindSpec* spec : kindSpecs()) {
    if (spec->kind == kind) return spec;
  }
  return nullptr;
}

core::Status checkParams(const KindSpec& spec, const json& params) {
  if (!params.is_object()) return malformed("params", "must be an object");
  for (const auto& [key, value] : params.items()) {
    if (spec.param(key) == nullptr) {
      std::vector<std::string> names;
      for (const ParamSpec& p : spec.params) names.push_back(p.name);
      return malformed(key, "unknown parameter (expected " + joined(names) + ")");
    }
  }
  for (const ParamSpec& param : spec.params) {
    auto it = params.find(param.name);
    if (it == params.end()) {
      if (param.required) return malformed(param.name, "required");
      continue;
    }
    FC_RETURN_IF_ERROR(checkParamValue(param, *it));
  }
  return core::Status::ok();
}

json withDefaults(const KindSpec& spec, const json& params) {
  json out = params.is_object() ? params : json::object();
  for (const ParamSpec& param : spec.params) {
    if (!param.default_value.is_null() && !out.contains(param.name)) {
      out[param.name] = param.default_value;
    }
  }
  return out;
}

std::string formatNumber(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e10) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g", v);
  std::string text = buffer;
  if (auto plus = text.find("e+"); plus != std::string::npos) {
    text.erase(plus + 1, 1);
    while (text.size() > plus + 2 && text[plus + 1] == '0') text.erase(plus + 1, 1);
  }
  return text;
}

std::string describeRange(const ParamSpec& param) {
  if (!param.min && !param.max) return "";
  if (param.min && param.min_exclusive) {
    return "(" + formatNumber(*param.min) + ", " +
           (param.max ? formatNumber(*param.max) + "]" : "inf)");
  }
  if (param.min && param.max) return formatNumber(*param.min) + ".." + formatNumber(*param.max);
  if (param.min) return ">= " + formatNumber(*param.min);
  return "<= " + formatNumber(*param.max);
}

std::string toString(ParamType type) {
  switch (type) {
    case ParamType::kInteger:
      return "integer";
    case ParamType::kNumber:
      return "number";
    case ParamType::kBoolean:
      return "boolean";
    case ParamType::kChoice:
      return "choice";
    case ParamType::kObject:
      return "object";
    case ParamType::kIntegerList:
      return "integer list";
  }
  return "number";
}

std::string toString(PhaseShape shape) {
  return shape == PhaseShape::kRepeated ? "repeated" : "one_window";
}

std::string toString(Composition composition) {
  return composition == Composition::kStacks ? "stacks" : "exclusive";
}

std::string toString(Lifecycle lifecycle) {
  return lifecycle == Lifecycle::kLongRunning ? "long_running" : "instant";
}

json toJson(const ParamSpec& param) {
  json out{{"name", param.name},
           {"type", toString(param.type)},
           {"required", param.required},
           {"doc", param.doc}};
  if (!param.unit.empty()) out["unit"] = param.unit;
  if (param.min) out["min"] = *param.min;
  if (param.min && param.min_exclusive) out["min_exclusive"] = true;
  if (param.max) out["max"] = *param.max;
  if (!param.choices.empty()) out["choices"] = param.choices;
  if (!param.default_value.is_null()) out["default"] = param.default_value;
  return out;
}

json toJson(const KindSpec& spec) {
  json params = json::array();
  for (const ParamSpec& param : spec.params) params.push_back(toJson(param));
  json phases{{"shape", toString(spec.phases.shape)}};
  if (spec.phases.shape == PhaseShape::kRepeated) {
    phases["on"] = spec.phases.on_param;
    phases["off"] = spec.phases.off_param;
    phases["count"] = spec.phases.count_param;
  }
  return json{{"kind", spec.kind},
              {"summary", spec.summary},
              {"target", toString(spec.target)},
              {"resource", spec.resource},
              {"composition", toString(spec.composition)},
              {"lifecycle", toString(spec.lifecycle)},
              {"phases", phases},
              {"params", params}};
}

std::string markdownParamTable(const KindSpec& spec) {
  std::string out = "| key | type | unit | range | default | meaning |\n";
  out += "| --- | --- | --- | --- | --- | --- |\n";
  for (const ParamSpec& param : spec.params) {
    std::string type = toString(param.type);
    if (param.type == ParamType::kChoice) {
      std::string choices;
      for (const std::string& c : param.choices)
        choices += (choices.empty() ? "" : ", ") + ("`" + c + "`");
      type = "one of " + choices;
    }
    std::string fallback = param.required ? "required" : "";
    if (!param.default_value.is_null()) {
      fallback = "`" +
                 (param.default_value.is_string() ? param.default_value.get<std::string>()
                                                  : param.default_value.dump()) +
                 "`";
    }
    out += "| `" + param.name + "` | " + type + " | " + param.unit + " | " + describeRange(param) +
           " | " + fallback + " | " + param.doc + " |\n";
  }
  return out;
}

}  // namespace fabric_chaos::injectors
