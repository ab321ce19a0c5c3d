#include "injectors/model/incast_spec.h"

namespace fabric_chaos::injectors {

const KindSpec& incastSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "incast";
    s.summary =
        "Source hosts send TCP traffic to one sink host for the step's window: many-to-one "
        "congestion at the sink's switch port, the hot spot a collective or a storage burst makes.";
    s.target = TargetType::kTrafficSet;
    s.resource = "traffic";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kLongRunning;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"flows_per_source",
         ParamType::kInteger,
         "flows",
         1,
         false,
         64,
         {},
         false,
         1,
         "TCP connections each source opens to the sink"},
        {"message_bytes",
         ParamType::kInteger,
         "bytes",
         1024,
         false,
         16777216,
         {},
         false,
         131072,
         "bytes per write on each flow"},
        {"rate_mbps",
         ParamType::kInteger,
         "Mbit/s",
         1,
         false,
         400000,
         {},
         false,
         nullptr,
         "offered load per source, shared by its flows; absent: as fast as TCP goes"},
        {"dscp",
         ParamType::kInteger,
         "",
         0,
         false,
         63,
         {},
         false,
         0,
         "DSCP of the incast traffic: the training traffic's class (on a modelled lab port, a "
         "lossless DSCP such as 26 shares the RDMA class's queue) or another one"},
        {"congestion_control",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"cubic", "reno", "bbr", "dctcp"},
         false,
         nullptr,
         "TCP congestion control of the incast flows; absent: the host's default (often bbr, "
         "which ignores ECN marks); one the host lacks fails the apply"},
        {"port",
         ParamType::kInteger,
         "",
         1024,
         false,
         65535,
         {},
         false,
         7700,
         "TCP port the sink listens on"},
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
