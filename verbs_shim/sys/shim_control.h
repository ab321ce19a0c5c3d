#pragma once
// What the control channel's requests do inside a shim-loaded program (verbs_shim/sys/
// control_server.h's handler): arm and disarm the context ops' faults, and the status answer's
// account of the program: its pid's comm, its rank as the launcher gave it, the devices it
// opened, and per armed fault the events seen and injections made. Thread-safe.

#include <optional>
#include <string>

#include "verbs_shim/sys/control_server.h"

namespace fabric_chaos::verbs_shim {

// The program's rank from its environment: FABRIC_CHAOS_RANK, else what MPI, Slurm or
// torchrun set (OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, RANK); nullopt when none is a
// non-negative integer. `getenv` is a parameter so that tests can give an environment.
std::optional<int> rankFromEnvironment(const char* (*getenv)(const char*));

class ShimControl : public ControlHandler {
 public:
  ShimControl(std::string comm, std::optional<int> rank) : comm_(std::move(comm)), rank_(rank) {}
  void arm(const ArmRequest& request) override;
  void disarm() override;
  nlohmann::json statusMembers() override;

 private:
  std::string comm_;
  std::optional<int> rank_;
};

}  // namespace fabric_chaos::verbs_shim
