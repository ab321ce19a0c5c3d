#include "injectors/sys/flow_hash_reset.h"

#include <cstddef>

#include "injectors/sys/netns.h"
#include "injectors/sys/tc_bpf.h"

// The compiled lab/bpf/flow_hash_reset.bpf.c (cmake/BpfObject.cmake generates the definitions).
extern const unsigned char fc_flow_hash_reset_bpf_object[];
extern const std::size_t fc_flow_hash_reset_bpf_object_size;

namespace fabric_chaos::sys {
namespace {

using core::Status;

// The program's function name in lab/bpf/flow_hash_reset.bpf.c, which the kernel reports.
constexpr char kProgramName[] = "fc_hash_reset";

const tc_bpf::EmbeddedObject kReset = {
    fc_flow_hash_reset_bpf_object, fc_flow_hash_reset_bpf_object_size,
    "fc_flow_hash_reset",          kProgramName,
    "the flow-hash reset",         ""};

}  // namespace

Status attachFlowHashReset(const std::string& netns, const std::string& ifname) {
  return tc_bpf::loadAndAttach(netns, ifname, kReset, tc_bpf::kFlowHashResetSlot, {});
}

core::Result<bool> hasFlowHashReset(const std::string& netns, const std::string& ifname) {
  const std::string where = tc_bpf::portName(netns, ifname);
  bool present = false;
  Status status = runInNetns(netns, [&]() -> Status {
    auto ifindex = tc_bpf::ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    auto prog_id = tc_bpf::programInSlot(*ifindex, tc_bpf::kFlowHashResetSlot, where);
    if (!prog_id.isOk()) return prog_id.status();
    if (!prog_id->has_value()) return Status::ok();
    auto name = tc_bpf::programName(**prog_id);
    if (!name.isOk()) return name.status();
    present = *name == kProgramName;
    return Status::ok();
  });
  if (!status.isOk()) return status;
  return present;
}

}  // namespace fabric_chaos::sys
