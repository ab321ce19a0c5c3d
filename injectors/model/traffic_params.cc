#include "injectors/model/traffic_params.h"

namespace fabric_chaos::injectors {

ParamSpec messageBytesParam() {
  return {"message_bytes", ParamType::kInteger,           "bytes", 1024, false, 16777216, {}, false,
          131072,          "bytes per write on each flow"};
}

ParamSpec rateMbpsParam(const std::string& doc) {
  return {"rate_mbps", ParamType::kInteger, "Mbit/s", 1, false, 400000, {}, false, nullptr, doc};
}

ParamSpec dscpParam(const std::string& doc) {
  return {"dscp", ParamType::kInteger, "", 0, false, 63, {}, false, 0, doc};
}

ParamSpec congestionControlParam(const std::string& flows) {
  return {"congestion_control",
          ParamType::kChoice,
          "",
          std::nullopt,
          false,
          std::nullopt,
          {"cubic", "reno", "bbr", "dctcp"},
          false,
          nullptr,
          "TCP congestion control of " + flows +
              "; absent: the host's default (often bbr, which ignores ECN marks); one the host "
              "lacks fails the apply"};
}

ParamSpec sinkPortParam(int default_port) {
  return {"port",       ParamType::kInteger,           "", 1024, false, 65535, {}, false,
          default_port, "TCP port the sink listens on"};
}

}  // namespace fabric_chaos::injectors
