#include "injectors/sys/ecn_marker.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"
#include "injectors/sys/ecn_marker_abi.h"
#include "injectors/sys/netns.h"
#include "injectors/sys/tc_bpf.h"

// The compiled lab/bpf/ecn_marker.bpf.c (cmake/BpfObject.cmake generates the definitions).
extern const unsigned char fc_ecn_marker_bpf_object[];
extern const std::size_t fc_ecn_marker_bpf_object_size;

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;
using tc_bpf::errorOf;
using tc_bpf::permissionOr;

static_assert(kEcnProbabilityOne == FC_ECN_PROB_ONE);
static_assert(sizeof(fc_ecn_params) == 6 * sizeof(uint64_t));

// .rodata: the port's parameters, read by the program as constants.
Status setParams(bpf_object* object, const EcnMarkerConfig& config) {
  bpf_map* rodata = bpf_object__find_map_by_name(object, ".rodata");
  if (rodata == nullptr) {
    return Status(StatusCode::kInternal, "the embedded ECN marker object has no .rodata");
  }
  const fc_ecn_params params = {static_cast<fc_u64>(config.rate_bps / 8),
                                static_cast<fc_u64>(config.buffer_bytes),
                                static_cast<fc_u64>(config.kmin_bytes),
                                static_cast<fc_u64>(config.kmax_bytes),
                                config.pmax,
                                config.lossless_dscp_mask};
  if (int ret = bpf_map__set_initial_value(rodata, &params, sizeof(params)); ret != 0) {
    return Status(StatusCode::kInternal,
                  "the embedded ECN marker's parameters do not match this loader (.rodata size)",
                  errorOf(ret));
  }
  return Status::ok();
}

const tc_bpf::EmbeddedObject kMarker = {
    fc_ecn_marker_bpf_object, fc_ecn_marker_bpf_object_size, "fc_ecn_marker", FC_ECN_PROG_NAME,
    "the ECN marker",
    // Its virtual queues sit behind a bpf_spin_lock, which needs the kernel's BTF.
    "a kernel without BTF support cannot hold its bpf_spin_lock map"};

}  // namespace

Status attachEcnMarker(const std::string& netns, const std::string& ifname,
                       const EcnMarkerConfig& config) {
  if (config.rate_bps <= 0 || config.buffer_bytes <= 0 || config.kmin_bytes < 0 ||
      config.kmax_bytes < config.kmin_bytes || config.pmax > kEcnProbabilityOne) {
    return Status(StatusCode::kInvalidArgument,
                  "invalid ECN marker configuration for " + tc_bpf::portName(netns, ifname));
  }
  return tc_bpf::loadAndAttach(netns, ifname, kMarker, tc_bpf::kEcnMarkerSlot,
                               [&](bpf_object* object) { return setParams(object, config); });
}

Status detachEcnMarker(const std::string& netns, const std::string& ifname) {
  return tc_bpf::detachFromSlot(netns, ifname, tc_bpf::kEcnMarkerSlot);
}

core::Result<EcnMarks> readEcnMarks(const std::string& netns, const std::string& ifname) {
  const std::string where = tc_bpf::portName(netns, ifname);
  EcnMarks marks;
  Status status = runInNetns(netns, [&]() -> Status {
    auto ifindex = tc_bpf::ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    auto prog_id = tc_bpf::programInSlot(*ifindex, tc_bpf::kEcnMarkerSlot, where);
    if (!prog_id.isOk()) return prog_id.status();
    if (!prog_id->has_value()) return Status(StatusCode::kNotFound, "no ECN marker on " + where);
    core::UniqueFd program(bpf_prog_get_fd_by_id(**prog_id));
    if (program.get() < 0) {
      const int err = errno;
      return permissionOr(err, "opening program " + std::to_string(**prog_id),
                          StatusCode::kNotFound, strerror(err));
    }
    uint32_t map_ids[8] = {};
    bpf_prog_info info{};
    info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
    info.map_ids = reinterpret_cast<uint64_t>(map_ids);
    uint32_t info_size = sizeof(info);
    if (int ret = bpf_obj_get_info_by_fd(program.get(), &info, &info_size); ret != 0) {
      return permissionOr(errorOf(ret), "reading program " + std::to_string(**prog_id),
                          StatusCode::kInternal, strerror(errorOf(ret)));
    }
    const uint32_t count = std::min<uint32_t>(info.nr_map_ids, 8);
    for (uint32_t i = 0; i < count; ++i) {
      core::UniqueFd map(bpf_map_get_fd_by_id(map_ids[i]));
      if (map.get() < 0) continue;
      bpf_map_info map_info{};
      uint32_t map_info_size = sizeof(map_info);
      if (bpf_obj_get_info_by_fd(map.get(), &map_info, &map_info_size) != 0) continue;
      if (std::strcmp(map_info.name, FC_ECN_COUNTS_MAP) != 0) continue;
      if (map_info.value_size != sizeof(fc_ecn_counts)) {
        return Status(StatusCode::kInternal,
                      "the marker on " + where + " has counters of another layout");
      }
      for (uint32_t cls = 0; cls < FC_ECN_CLASSES; ++cls) {
        fc_ecn_counts counts{};
        if (int ret = bpf_map_lookup_elem(map.get(), &cls, &counts); ret != 0) {
          return Status(StatusCode::kInternal, "reading the marker's counters on " + where,
                        errorOf(ret));
        }
        EcnClassCounts& out = cls == FC_ECN_CLASS_LOSSLESS ? marks.lossless : marks.best_effort;
        out = {counts.packets, counts.ect, counts.marked};
      }
      return Status::ok();
    }
    return Status(StatusCode::kNotFound,
                  "the program on " + where + "'s egress (id " + std::to_string(**prog_id) +
                      ") is not an ECN marker: it has no " FC_ECN_COUNTS_MAP " map");
  });
  if (!status.isOk()) return status;
  return marks;
}

}  // namespace fabric_chaos::sys
