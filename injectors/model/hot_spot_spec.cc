#include "injectors/model/hot_spot_spec.h"

#include "injectors/model/traffic_params.h"

namespace fabric_chaos::injectors {

const KindSpec& hotSpotSpec() {
  static const KindSpec spec = [] {
    KindSpec s = trafficKindSpec(
        "hot_spot",
        "Elephant flows pinned through one switch port or spine uplink for the step's window, "
        "sharing it with the training traffic: on a leaf-spine fabric, source ports are chosen "
        "so that ECMP hashes every flow onto the chosen uplink (the classic ECMP collision).");
    s.params = {
        transportParam(),
        {"flows",
         ParamType::kInteger,
         "flows",
         1,
         false,
         64,
         {},
         false,
         4,
         "elephant flows (TCP connections, or QPs with verbs) each source opens to the sink"},
        messageBytesParam(),
        rateMbpsParam(
            "offered load per source, shared by its flows; absent: as fast as the transport goes "
            "(an elephant)"),
        dscpParam(
            "DSCP of the elephants: the training traffic's class (a modelled port then queues "
            "them together) or another one"),
        congestionControlParam("the elephant flows"),
        sinkPortParam(7720),
        {"path",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"busiest", "idlest"},
         false,
         "busiest",
         "when the selector names several uplinks: pin to the one that sent the most bytes "
         "over sample_ms before the apply (where the training flows already are: a collision), "
         "or the fewest (the lucky placement, for comparison)"},
        {"sample_ms",
         ParamType::kInteger,
         "ms",
         100,
         false,
         10000,
         {},
         false,
         1000,
         "how long the apply watches the candidate uplinks' transmit counters to choose one"},
        {"first_source_port",
         ParamType::kInteger,
         "",
         1024,
         false,
         65535 - kHotSpotPortSearch,
         {},
         false,
         20000,
         "where the search for source ports that hash onto the chosen uplink starts (it tries "
         "4096 ports); keep it clear of the hosts' ephemeral range (32768-60999)"},
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
