#pragma once
// What every traffic kind (incast, hot_spot) shares, declared once so that their ranges, defaults
// and docs cannot drift apart: the declaration's fixed part (a traffic set, long-running,
// exclusive, one window), the parameters the generator (`fabric-chaos traffic source`) accepts,
// and the rules that tie them together.

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

// A traffic kind's declaration without its parameters.
KindSpec trafficKindSpec(const std::string& kind, const std::string& summary);

ParamSpec transportParam();                                  // "transport": tcp | verbs
ParamSpec messageBytesParam();                               // "message_bytes"
ParamSpec rateMbpsParam(const std::string& doc);             // "rate_mbps"
ParamSpec dscpParam(const std::string& doc);                 // "dscp"
ParamSpec congestionControlParam(const std::string& flows);  // "congestion_control"
ParamSpec sinkPortParam(int default_port);                   // "port"

// checkParams, then what one parameter cannot say alone: congestion_control is TCP's.
core::Status checkTrafficParams(const KindSpec& spec, const json& params);

}  // namespace fabric_chaos::injectors
