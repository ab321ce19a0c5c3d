#include "injectors/model/ib_fault_specs.h"

#include "injectors/model/link_flap_spec.h"

namespace fabric_chaos::injectors {

std::string_view toString(SmFailoverMode mode) {
  switch (mode) {
    case SmFailoverMode::kKill:
      return "kill";
    case SmFailoverMode::kStop:
      return "stop";
    case SmFailoverMode::kPortDown:
      return "port_down";
  }
  return "kill";
}

SmFailoverMode smFailoverModeOf(const json& params) {
  const std::string mode = params.value("mode", "kill");
  if (mode == "stop") return SmFailoverMode::kStop;
  if (mode == "port_down") return SmFailoverMode::kPortDown;
  return SmFailoverMode::kKill;
}

const KindSpec& smFailoverSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "sm_failover";
    s.summary =
        "Fails a subnet manager: its OpenSM killed (a crash) or stopped, or its port taken down; "
        "a standby must take over. Revert restarts it as it ran, or brings its port back.";
    s.target = TargetType::kSubnetManager;
    s.resource = "subnet_manager";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"mode",
         ParamType::kChoice,
         "",
         std::nullopt,
         false,
         std::nullopt,
         {"kill", "stop", "port_down"},
         false,
         "kill",
         "kill (SIGKILL, a crash), stop (SIGTERM, a clean exit) or port_down (the SM's port "
         "down, the SM alive)"},
    };
    return s;
  }();
  return spec;
}

const KindSpec& ibLinkDownSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "ib_link_down";
    s.summary =
        "Takes an InfiniBand link down for the step's duration: a failed cable or transceiver "
        "between two switches or a switch and an HCA. The SM must route around it.";
    s.target = TargetType::kIbPort;
    s.resource = "ib_link_state";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    return s;
  }();
  return spec;
}

const KindSpec& ibLinkFlapSpec() {
  static const KindSpec spec = [] {
    KindSpec s = linkFlapSpec();
    s.kind = "ib_link_flap";
    s.summary =
        "Takes an InfiniBand link down, then up again, count times: a flapping cable that makes "
        "the SM re-route on every change.";
    s.target = TargetType::kIbPort;
    s.resource = "ib_link_state";
    s.composition = Composition::kExclusive;
    return s;
  }();
  return spec;
}

const KindSpec& ibMadLossSpec() {
  static const KindSpec spec = [] {
    KindSpec s;
    s.kind = "ib_mad_loss";
    s.summary =
        "Drops a share of the management datagrams (SMPs and SA queries) through an InfiniBand "
        "port: a marginal link that stresses SM sweeps and path queries.";
    s.target = TargetType::kIbPort;
    s.resource = "ib_mad_errors";
    s.composition = Composition::kExclusive;
    s.lifecycle = Lifecycle::kInstant;
    s.phases = {PhaseShape::kOneWindow, "", "", ""};
    s.params = {
        {"percent",
         ParamType::kInteger,
         "%",
         1,
         false,
         100,
         {},
         true,
         nullptr,
         "share of the MADs through the port that are dropped"},
    };
    return s;
  }();
  return spec;
}

}  // namespace fabric_chaos::injectors
