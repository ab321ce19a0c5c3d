#include "workload/report.h"

#include <limits>

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;
using nlohmann::ordered_json;

// ordered_json keeps the documented key order ("type" first), which makes the stream readable.
ordered_json header(const char* type, int rank) {
  ordered_json line;
  line["type"] = type;
  line["rank"] = rank;
  return line;
}

Status bad(const std::string& what) {
  return Status(StatusCode::kInvalidArgument, "report line: " + what);
}

// Reads an integer field that must fit in int64_t; names the field on failure.
Status readInt64(const json& value, const std::string& field, int64_t* out) {
  if (!value.is_number_integer()) return bad("\"" + field + "\" must be an integer");
  if (value.is_number_unsigned()) {
    auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return bad("\"" + field + "\" is out of range");
    }
    *out = static_cast<int64_t>(u);
    return Status::ok();
  }
  *out = value.get<int64_t>();
  return Status::ok();
}

Status readField(const json& object, const char* field, int64_t* out) {
  auto it = object.find(field);
  if (it == object.end()) return bad(std::string("missing \"") + field + "\"");
  return readInt64(*it, field, out);
}

Status decodeSamples(const json& object, std::vector<RawSample>* samples) {
  auto it = object.find("samples");
  if (it == object.end()) return bad("missing \"samples\"");
  if (!it->is_array()) return bad("\"samples\" must be an array");
  samples->reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& row = (*it)[i];
    const std::string name = "samples[" + std::to_string(i) + "]";
    if (!row.is_array() || row.size() != 4) {
      return bad("\"" + name + "\" must be [iteration,start_ns,duration_ns,bytes]");
    }
    RawSample s;
    FC_RETURN_IF_ERROR(readInt64(row[0], name + "[0]", &s.iteration));
    FC_RETURN_IF_ERROR(readInt64(row[1], name + "[1]", &s.start_ns));
    FC_RETURN_IF_ERROR(readInt64(row[2], name + "[2]", &s.duration_ns));
    FC_RETURN_IF_ERROR(readInt64(row[3], name + "[3]", &s.bytes));
    if (s.iteration < 0 || s.duration_ns < 0 || s.bytes < 0) {
      return bad("\"" + name + "\" has a negative iteration, duration or size");
    }
    samples->push_back(s);
  }
  return Status::ok();
}

}  // namespace

std::string encodeReady(int rank, int64_t t_ns) {
  ordered_json line = header("ready", rank);
  line["t_ns"] = t_ns;
  return line.dump();
}

std::string encodeSamples(int rank, const std::vector<RawSample>& samples) {
  ordered_json line = header("samples", rank);
  ordered_json rows = ordered_json::array();
  for (const auto& s : samples) rows.push_back({s.iteration, s.start_ns, s.duration_ns, s.bytes});
  line["samples"] = std::move(rows);
  return line.dump();
}

std::string encodeEvent(int rank, int64_t t_ns, const std::string& kind, const json& detail) {
  ordered_json line = header("event", rank);
  line["t_ns"] = t_ns;
  line["kind"] = kind;
  line["detail"] = detail.is_null() ? ordered_json::object() : ordered_json(detail);
  // Invalid UTF-8 in a detail string must not throw: it is replaced, the line stays valid JSON.
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encodeDone(int rank, int64_t t_ns, int64_t iterations) {
  ordered_json line = header("done", rank);
  line["t_ns"] = t_ns;
  line["iterations"] = iterations;
  return line.dump();
}

core::Result<ReportLine> decodeReportLine(const std::string& line) {
  json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return bad("not valid JSON");
  if (!object.is_object()) return bad("not a JSON object");

  ReportLine out;
  auto type = object.find("type");
  if (type == object.end() || !type->is_string()) return bad("missing string \"type\"");
  const auto& name = type->get_ref<const std::string&>();
  if (name == "ready") {
    out.type = ReportLine::Type::kReady;
  } else if (name == "samples") {
    out.type = ReportLine::Type::kSamples;
  } else if (name == "event") {
    out.type = ReportLine::Type::kEvent;
  } else if (name == "done") {
    out.type = ReportLine::Type::kDone;
  } else {
    return bad("unknown \"type\" \"" + name + "\"");
  }

  int64_t rank = 0;
  FC_RETURN_IF_ERROR(readField(object, "rank", &rank));
  if (rank < 0 || rank > std::numeric_limits<int>::max()) return bad("\"rank\" is out of range");
  out.rank = static_cast<int>(rank);

  switch (out.type) {
    case ReportLine::Type::kReady:
      FC_RETURN_IF_ERROR(readField(object, "t_ns", &out.t_ns));
      break;
    case ReportLine::Type::kSamples:
      FC_RETURN_IF_ERROR(decodeSamples(object, &out.samples));
      break;
    case ReportLine::Type::kEvent: {
      FC_RETURN_IF_ERROR(readField(object, "t_ns", &out.t_ns));
      auto kind = object.find("kind");
      if (kind == object.end() || !kind->is_string() ||
          kind->get_ref<const std::string&>().empty()) {
        return bad("\"kind\" must be a non-empty string");
      }
      out.kind = kind->get<std::string>();
      auto detail = object.find("detail");
      if (detail != object.end()) {
        if (!detail->is_object()) return bad("\"detail\" must be an object");
        out.detail = *detail;
      }
      break;
    }
    case ReportLine::Type::kDone:
      FC_RETURN_IF_ERROR(readField(object, "t_ns", &out.t_ns));
      FC_RETURN_IF_ERROR(readField(object, "iterations", &out.iterations));
      if (out.iterations < 0) return bad("\"iterations\" must not be negative");
      break;
  }
  return out;
}

}  // namespace fabric_chaos::workload
