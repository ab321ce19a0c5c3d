#pragma once
// Private to injectors/sys: what the lab's tc BPF programs (ecn_marker.cc, flow_hash_reset.cc)
// share, so that each file keeps only what its program means. Loading an object compiled into the
// binary, with the verifier's reason when the kernel refuses it, and one direct-action cls_bpf
// filter of ours on a port's clsact qdisc: attached, found or removed by its slot. libbpf's
// -errno returns become Statuses that say what was done to which port, quoting libbpf's last
// message (the kernel's extended ack); libbpf prints nothing to stderr, since it reports through a
// process-wide callback that these functions install. Every call acts in the calling thread's
// network namespace (callers wrap them in runInNetns).

#include <bpf/libbpf.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys::tc_bpf {

// Where one of our filters sits on a port's clsact qdisc. Every filter this product attaches has
// its slot here, so that no two share one: attaching replaces whatever holds the slot.
struct FilterSlot {
  bpf_tc_attach_point hook;  // BPF_TC_INGRESS or BPF_TC_EGRESS
  uint32_t handle;
  uint32_t priority;  // `tc filter show` calls it "pref"
};
// The PFC gate on a PFC-honouring lab switch's port: first on egress, so that a paused frame is
// held before anything counts it. `tc filter show dev IF egress` lists "pref 1 ... handle 0x3
// fc_pfc_gate ... direct-action"; a frame it lets through goes on to the next filter.
inline constexpr FilterSlot kPfcGateSlot{BPF_TC_EGRESS, 3, 1};
// The PFC gate's ingress tagger on the same ports: first on ingress, so that the port a frame came
// in on is known before anything else runs. `tc filter show dev IF ingress` lists "pref 1 ...
// handle 0x4 fc_pfc_ingress ... direct-action".
inline constexpr FilterSlot kPfcIngressSlot{BPF_TC_INGRESS, 4, 1};
// The ECN marker on a modelled port: `tc filter show dev IF egress` lists "pref 2 ... handle 0x1
// fc_ecn_marker ... direct-action".
inline constexpr FilterSlot kEcnMarkerSlot{BPF_TC_EGRESS, 1, 2};
// The flow-hash reset on a leaf's host port: `tc filter show dev IF ingress` lists "pref 2 ...
// handle 0x2 fc_hash_reset ... direct-action".
inline constexpr FilterSlot kFlowHashResetSlot{BPF_TC_INGRESS, 2, 2};

// A BPF object compiled into the binary by fc_embed_bpf_object (cmake/BpfObject.cmake).
struct EmbeddedObject {
  const unsigned char* bytes;
  std::size_t size;
  const char* object_name;   // "fc_ecn_marker"
  const char* program_name;  // its tc program, as the kernel names it (15 characters at most)
  const char* description;   // "the ECN marker", for error messages
  // Why the kernel may refuse it when the verifier logged nothing ("" when there is no guess).
  const char* silent_refusal_hint;
};

// "fcl-l0:p0", or "p0" in the caller's namespace (netns "").
std::string portName(const std::string& netns, const std::string& ifname);

// The port's ifindex in the calling thread's namespace; kNotFound naming the namespace.
core::Result<int> ifindexOf(const std::string& netns, const std::string& ifname);

// Called between open and load, e.g. to set the object's .rodata; returns why it cannot.
using ObjectConfigurer = std::function<core::Status(bpf_object* object)>;

// Opens `object`, lets `configure` (may be empty) prepare it, loads it and attaches its program
// to netns:ifname in `slot`, adding the clsact qdisc when missing and replacing what held the
// slot; nothing else on the qdisc is touched. The filter then holds the program (and the program
// its maps), so it outlives this process. kNotFound: no such namespace or port;
// kPermissionDenied: not root; kNotSupported: the kernel refused the program, clsact or cls_bpf.
core::Status loadAndAttach(const std::string& netns, const std::string& ifname,
                           const EmbeddedObject& object, const FilterSlot& slot,
                           const ObjectConfigurer& configure);

struct ObjectCloser {
  void operator()(bpf_object* object) const { bpf_object__close(object); }
};
using ObjectPtr = std::unique_ptr<bpf_object, ObjectCloser>;

// Opens `object`, lets `configure` prepare it and loads it, for a caller that attaches its
// program to several ports (attachProgram) and keeps its maps. `where` names the ports in errors.
core::Result<ObjectPtr> loadObject(const EmbeddedObject& object, const std::string& where,
                                   const ObjectConfigurer& configure);

// Attaches the loaded `program_fd` to `ifname` of the calling thread's namespace in `slot`, as
// loadAndAttach does; `where` names the port in errors.
core::Status attachProgram(int program_fd, const std::string& ifname, const std::string& where,
                           const FilterSlot& slot, const char* description);

// The id of the program in `slot` of the port (ifindex), nullopt when the slot is empty or the
// port has no clsact qdisc.
core::Result<std::optional<uint32_t>> programInSlot(int ifindex, const FilterSlot& slot,
                                                    const std::string& where);

// The kernel's name of program `id` (bpf_prog_info.name).
core::Result<std::string> programName(uint32_t id);

// Removes the filter in `slot` only: the clsact qdisc and every other filter on it stay. OK when
// there is none (nor a clsact qdisc).
core::Status detachFromSlot(const std::string& netns, const std::string& ifname,
                            const FilterSlot& slot);

// libbpf returns -errno (or -1 with errno set): the errno.
int errorOf(int ret);

// kPermissionDenied for EPERM/EACCES (BPF and tc need root), else `otherwise` with "what:
// message".
core::Status permissionOr(int err, const std::string& what, core::StatusCode otherwise,
                          const std::string& message);

}  // namespace fabric_chaos::sys::tc_bpf
