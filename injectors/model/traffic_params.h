#pragma once
// The parameters every traffic kind (incast, hot_spot) shares, declared once so that their
// ranges, defaults and docs cannot drift apart: what the generator (`fabric-chaos traffic
// source`) accepts.

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

ParamSpec messageBytesParam();                               // "message_bytes"
ParamSpec rateMbpsParam(const std::string& doc);             // "rate_mbps"
ParamSpec dscpParam(const std::string& doc);                 // "dscp"
ParamSpec congestionControlParam(const std::string& flows);  // "congestion_control"
ParamSpec sinkPortParam(int default_port);                   // "port"

}  // namespace fabric_chaos::injectors
