#pragma once
// What a fault kind declares about itself, once: its parameters as a schema (name, type, unit,
// range, default, doc), the shape of its phases, the part of its target it holds and how faults
// holding it compose, and whether it is instant or long-running. Validation (checkParams), the
// scenario planner (phases), composition checks, GET /v1/capabilities, docs/faults.md's parameter
// tables and the dashboard's scenario editor all read these declarations; nothing copies them.
// Pure data and pure functions; the specs are constants, safe from any thread.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "injectors/model/target.h"

namespace fabric_chaos::injectors {

using nlohmann::json;

enum class ParamType {
  kInteger,  // a JSON integer
  kNumber,   // any JSON number
  kBoolean,
  kChoice,       // a string from `choices`
  kObject,       // a nested object the kind checks itself (netem's loss_model)
  kIntegerList,  // a non-empty JSON array of distinct integers, each in the range (priorities)
};

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kNumber;
  std::string unit;  // "ms", "%", "kbit/s", "packets", "" for none
  std::optional<double> min;
  bool min_exclusive = false;  // (0, 100] rather than 0..100
  std::optional<double> max;
  std::vector<std::string> choices;  // kChoice
  bool required = false;
  json default_value;  // null: absent means "not applied" (or the kind derives it, see doc)
  std::string doc;     // one line; also names the parameters it needs or excludes
};

// How a step of the kind becomes fault-in-force windows (scenarios/plan.h).
enum class PhaseShape {
  kOneWindow,  // one window of the step's duration_ms
  kRepeated,   // `count` windows of `on` ms separated by `off` ms; duration_ms is derived
};

struct PhasePattern {
  PhaseShape shape = PhaseShape::kOneWindow;
  // kRepeated: the parameters holding the window length, the gap (defaults to the window) and
  // the number of windows (defaults to 1).
  std::string on_param;
  std::string off_param;
  std::string count_param;
};

enum class Composition {
  kStacks,     // overlapping faults merge; the state from before the first is restored
  kExclusive,  // one fault at a time; overlaps are refused before the run starts
};

enum class Lifecycle {
  kInstant,      // capture, apply, revert: the kernel holds the fault between the two
  kLongRunning,  // an emitter or generator that runs for the whole window (start, stop, health)
};

struct KindSpec {
  std::string kind;
  std::string summary;                         // one sentence
  TargetType target = TargetType::kInterface;  // the alternative of the target union it acts on
  std::string resource;  // what the kind holds on its target: "link_state", "root_qdisc", ...
  Composition composition = Composition::kExclusive;
  Lifecycle lifecycle = Lifecycle::kInstant;
  PhasePattern phases;
  std::vector<ParamSpec> params;

  const ParamSpec* param(std::string_view name) const;  // nullptr when not declared
};

// Every kind this build knows, sorted by name; findKindSpec returns nullptr for others.
const std::vector<const KindSpec*>& kindSpecs();
const KindSpec* findKindSpec(std::string_view kind);

// Checks `params` against the schema: an object, no undeclared names, every required one present,
// types, choices and ranges; "<name>: <problem>" ("down_ms: must be an integer in 1..600000").
// A wrong shape (not an object, an unknown or missing name, a wrong JSON type) is
// kInvalidArgument (400); a well-typed value the kind cannot take (out of range, not one of the
// choices, a repeated list item) is kUnprocessable (422). Cross-parameter rules stay with the
// kind's own validate(), and are kUnprocessable too (unacceptableParam).
core::Status checkParams(const KindSpec& spec, const json& params);

// One parameter's value against its declaration: "<name>: <problem>", coded as checkParams says.
core::Status checkParamValue(const ParamSpec& param, const json& value);

// A well-formed parameter the kind cannot take, alone or with the others: kUnprocessable (422)
// "<name>: <problem>".
core::Status unacceptableParam(const std::string& param, const std::string& problem);

// `params` with each absent parameter that has a default filled in.
json withDefaults(const KindSpec& spec, const json& params);

std::string toString(ParamType type);
std::string toString(PhaseShape shape);
std::string toString(Composition composition);
std::string toString(Lifecycle lifecycle);

// The schema as GET /v1/capabilities shows it (docs/api.md).
json toJson(const ParamSpec& param);
json toJson(const KindSpec& spec);

// docs/faults.md's generated parameter table of one kind.
std::string markdownParamTable(const KindSpec& spec);
// A bound as messages and docs print it: 600000, 0.5, 1e10 (integers as integers below 1e10,
// large round values in exponent form).
std::string formatNumber(double v);
// "1..600000", "(0, 100]", "0..1e10"; "" when unbounded.
std::string describeRange(const ParamSpec& param);

}  // namespace fabric_chaos::injectors
