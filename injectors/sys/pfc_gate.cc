#include "injectors/sys/pfc_gate.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "injectors/sys/pfc_gate_abi.h"
#include "injectors/sys/raw_packets.h"
#include "injectors/sys/tc_bpf.h"

// The compiled lab/bpf/pfc_gate.bpf.c (cmake/BpfObject.cmake generates the definitions).
extern const unsigned char fc_pfc_gate_bpf_object[];
extern const std::size_t fc_pfc_gate_bpf_object_size;

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;
using tc_bpf::errorOf;

static_assert(kPfcPriorities == FC_PFC_PRIORITIES);
static_assert(sizeof(fc_pfc_params) == 3 * sizeof(uint64_t));

const tc_bpf::EmbeddedObject kGate = {fc_pfc_gate_bpf_object, fc_pfc_gate_bpf_object_size,
                                      "fc_pfc_gate",          FC_PFC_PROG_NAME,
                                      "the PFC gate",         ""};

struct RingCloser {
  void operator()(ring_buffer* ring) const { ring_buffer__free(ring); }
};

class BpfPfcGate : public PfcGate {
 public:
  BpfPfcGate(tc_bpf::ObjectPtr object, int hold_map, int counts_map)
      : object_(std::move(object)), hold_map_(hold_map), counts_map_(counts_map) {}

  Status init(const std::vector<std::string>& ports, uint32_t mark) {
    bpf_map* held = bpf_object__find_map_by_name(object_.get(), FC_PFC_HELD_MAP);
    if (held == nullptr) return Status(StatusCode::kInternal, "the PFC gate has no ring buffer");
    ring_.reset(ring_buffer__new(bpf_map__fd(held), &BpfPfcGate::onHeld, this, nullptr));
    if (!ring_) {
      return Status(StatusCode::kInternal, "cannot read the PFC gate's ring buffer", errno);
    }
    for (const std::string& port : ports) {
      auto socket = openRawPacketSocket(port, mark);
      if (!socket.isOk()) return socket.status();
      const int ifindex = (*socket)->ifindex();
      fc_pfc_hold open{};
      fc_pfc_counts zero{};
      const uint32_t key = static_cast<uint32_t>(ifindex);
      if (bpf_map_update_elem(hold_map_, &key, &open, BPF_ANY) != 0 ||
          bpf_map_update_elem(counts_map_, &key, &zero, BPF_ANY) != 0) {
        return Status(StatusCode::kInternal, "cannot add " + port + " to the PFC gate's maps",
                      errno);
      }
      holds_[ifindex] = open;
      senders_[ifindex] = std::move(*socket);
    }
    return Status::ok();
  }

  Status holdUntil(int ifindex, int priority, int64_t until_ns) override {
    auto it = holds_.find(ifindex);
    if (it == holds_.end() || priority < 0 || priority >= kPfcPriorities) {
      return Status(StatusCode::kInvalidArgument, "no gated port " + std::to_string(ifindex) +
                                                      " priority " + std::to_string(priority));
    }
    it->second.hold_until_ns[priority] = static_cast<fc_pfc_u64>(until_ns < 0 ? 0 : until_ns);
    const uint32_t key = static_cast<uint32_t>(ifindex);
    if (int ret = bpf_map_update_elem(hold_map_, &key, &it->second, BPF_EXIST); ret != 0) {
      return Status(StatusCode::kInternal, "cannot update the PFC gate", errorOf(ret));
    }
    return Status::ok();
  }

  int heldFd() const override { return ring_buffer__epoll_fd(ring_.get()); }

  core::Result<std::vector<HeldFrame>> takeHeld() override {
    taken_.clear();
    if (int ret = ring_buffer__consume(ring_.get()); ret < 0) {
      return Status(StatusCode::kInternal, "reading the PFC gate's held frames", errorOf(ret));
    }
    return std::move(taken_);
  }

  Status send(int ifindex, const std::vector<uint8_t>& frame) override {
    auto it = senders_.find(ifindex);
    if (it == senders_.end()) {
      return Status(StatusCode::kInvalidArgument, "no gated port " + std::to_string(ifindex));
    }
    return it->second->send(frame.data(), frame.size());
  }

  core::Result<PfcGateCounts> counts(int ifindex) override {
    fc_pfc_counts raw{};
    const uint32_t key = static_cast<uint32_t>(ifindex);
    if (int ret = bpf_map_lookup_elem(counts_map_, &key, &raw); ret != 0) {
      return Status(StatusCode::kNotFound, "no gated port " + std::to_string(ifindex),
                    errorOf(ret));
    }
    PfcGateCounts out;
    for (int p = 0; p < kPfcPriorities; ++p) {
      out.held[p] = raw.held[p];
      out.dropped_no_room[p] = raw.dropped_no_room[p];
      out.dropped_oversize[p] = raw.dropped_oversize[p];
    }
    return out;
  }

 private:
  static int onHeld(void* context, void* data, size_t size) {
    auto* self = static_cast<BpfPfcGate*>(context);
    if (size < offsetof(fc_pfc_held_frame, data)) return 0;
    const auto* record = static_cast<const fc_pfc_held_frame*>(data);
    const size_t length = std::min<size_t>(record->length, FC_PFC_MAX_FRAME);
    HeldFrame frame;
    frame.ifindex = static_cast<int>(record->ifindex);
    frame.priority = static_cast<int>(record->priority);
    frame.ingress_ifindex = static_cast<int>(record->ingress_ifindex);
    frame.bytes.assign(record->data, record->data + length);
    self->taken_.push_back(std::move(frame));
    return 0;
  }

  tc_bpf::ObjectPtr object_;  // keeps the maps and the program open
  int hold_map_;
  int counts_map_;
  std::unique_ptr<ring_buffer, RingCloser> ring_;
  std::map<int, fc_pfc_hold> holds_;
  std::map<int, std::unique_ptr<RawPacketSocket>> senders_;
  std::vector<HeldFrame> taken_;
};

}  // namespace

core::Result<std::unique_ptr<PfcGate>> openPfcGate(const std::vector<std::string>& ports,
                                                   const PfcGateConfig& config) {
  if (config.reinject_mark == 0 || config.lossless_priority < 0 ||
      config.lossless_priority >= kPfcPriorities) {
    return Status(StatusCode::kInvalidArgument, "invalid PFC gate configuration");
  }
  std::string where = "ports";
  for (const std::string& port : ports) where += " " + port;
  auto object = tc_bpf::loadObject(kGate, where, [&](bpf_object* object) -> Status {
    bpf_map* rodata = bpf_object__find_map_by_name(object, ".rodata");
    if (rodata == nullptr) {
      return Status(StatusCode::kInternal, "the embedded PFC gate object has no .rodata");
    }
    const fc_pfc_params params = {config.lossless_dscp_mask,
                                  static_cast<fc_pfc_u64>(config.lossless_priority),
                                  config.reinject_mark};
    if (int ret = bpf_map__set_initial_value(rodata, &params, sizeof(params)); ret != 0) {
      return Status(StatusCode::kInternal,
                    "the embedded PFC gate's parameters do not match this loader", errorOf(ret));
    }
    return Status::ok();
  });
  if (!object.isOk()) return object.status();
  bpf_map* hold = bpf_object__find_map_by_name(object->get(), FC_PFC_HOLD_MAP);
  bpf_map* counts = bpf_object__find_map_by_name(object->get(), FC_PFC_COUNTS_MAP);
  bpf_program* program = bpf_object__find_program_by_name(object->get(), FC_PFC_PROG_NAME);
  bpf_program* ingress = bpf_object__find_program_by_name(object->get(), FC_PFC_INGRESS_PROG_NAME);
  if (hold == nullptr || counts == nullptr || program == nullptr || ingress == nullptr) {
    return Status(StatusCode::kInternal, "the embedded PFC gate object lacks its maps or programs");
  }
  const int program_fd = bpf_program__fd(program);
  auto gate =
      std::make_unique<BpfPfcGate>(std::move(*object), bpf_map__fd(hold), bpf_map__fd(counts));
  // Maps first, so that the program finds every port's entry from its first frame.
  FC_RETURN_IF_ERROR(gate->init(ports, config.reinject_mark));
  for (const std::string& port : ports) {
    FC_RETURN_IF_ERROR(tc_bpf::attachProgram(bpf_program__fd(ingress), port, port,
                                             tc_bpf::kPfcIngressSlot, kGate.description));
    FC_RETURN_IF_ERROR(
        tc_bpf::attachProgram(program_fd, port, port, tc_bpf::kPfcGateSlot, kGate.description));
  }
  return std::unique_ptr<PfcGate>(std::move(gate));
}

Status detachPfcGate(const std::string& ifname) {
  FC_RETURN_IF_ERROR(tc_bpf::detachFromSlot("", ifname, tc_bpf::kPfcIngressSlot));
  return tc_bpf::detachFromSlot("", ifname, tc_bpf::kPfcGateSlot);
}

}  // namespace fabric_chaos::sys
