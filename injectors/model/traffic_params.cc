#include "injectors/model/traffic_params.h"

namespace fabric_chaos::injectors {

KindSpec trafficKindSpec(const std::string& kind, const std::string& summary) {
  KindSpec s;
  s.kind = kind;
  s.summary = summary;
  s.target = TargetType::kTrafficSet;
  s.resource = "traffic";
  s.composition = Composition::kExclusive;
  s.lifecycle = Lifecycle::kLongRunning;
  s.phases = {PhaseShape::kOneWindow, "", "", ""};
  return s;
}

ParamSpec transportParam() {
  return {"transport",
          ParamType::kChoice,
          "",
          std::nullopt,
          false,
          std::nullopt,
          {"tcp", "verbs"},
          false,
          "tcp",
          "tcp: TCP connections; verbs: RC QPs streaming RDMA writes (RoCE), which needs an RDMA "
          "device on every host of the set (checked at submission)"};
}

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

core::Status checkTrafficParams(const KindSpec& spec, const json& params) {
  FC_RETURN_IF_ERROR(checkParams(spec, params));
  if (params.is_object() && params.value("transport", "tcp") == "verbs" &&
      params.contains("congestion_control")) {
    return unacceptableParam("congestion_control",
                             "TCP's; verbs flows have no congestion control to choose (RoCE's is "
                             "the NIC's, DCQCN on real hardware)");
  }
  return core::Status::ok();
}

ParamSpec sinkPortParam(int default_port) {
  return {"port",       ParamType::kInteger,
          "",           1024,
          false,        65535,
          {},           false,
          default_port, "port the sink listens on (TCP, or rdma_cm's port space for verbs)"};
}

}  // namespace fabric_chaos::injectors
