#include "injectors/model/incast_spec.h"

#include "injectors/model/traffic_params.h"

namespace fabric_chaos::injectors {

const KindSpec& incastSpec() {
  static const KindSpec spec = [] {
    KindSpec s = trafficKindSpec(
        "incast",
        "Source hosts send TCP or RDMA (verbs) traffic to one sink host for the step's window: "
        "many-to-one congestion at the sink's switch port, the hot spot a collective or a storage "
        "burst makes.");
    s.params = {
        transportParam(),
        {"flows_per_source",
         ParamType::kInteger,
         "flows",
         1,
         false,
         64,
         {},
         false,
         1,
         "connections (TCP) or QPs (verbs) each source opens to the sink"},
        messageBytesParam(),
        rateMbpsParam(
            "offered load per source, shared by its flows; absent: as fast as the transport goes"),
        dscpParam(
            "DSCP of the incast traffic: the training traffic's class (on a modelled lab port, a "
            "lossless DSCP such as 26 shares the RDMA class's queue) or another one"),
        congestionControlParam("the incast flows"),
        sinkPortParam(7700),
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
