#pragma once
// The leaf-spine lab's flow-hash reset on one leaf host port (docs/lab.md, "Five-tuple
// hashing"): libbpf loads the embedded lab/bpf/flow_hash_reset.bpf.c and attaches it as a
// direct-action cls_bpf filter on the port's clsact ingress, where it clears the hash a packet
// arrives with. Why: a Linux TCP sender's packets carry their socket's random hash into the leaf,
// and the kernel's multipath routing uses that hash when present instead of hashing the
// five-tuple (fib_multipath_hash_policy=1), so a random per-socket value, re-rolled on TCP
// timeouts, would pick the spine. The filter holds the program after this process exits, until
// the port goes. Failures are ordinary results (no root, no such port, the kernel refused the
// program). Thread-safe: each call works on its own thread inside the namespace.

#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

// Attaches the reset to `ifname`'s ingress in `netns` ("" = the caller's namespace), adding the
// clsact qdisc when missing and replacing a reset already there. Its own filter slot (handle 2,
// pref 2, ingress) never displaces the ECN marker (egress) or anything else on the qdisc.
// kNotFound: no such namespace or interface; kPermissionDenied: not root; kNotSupported: the
// kernel refused the program, clsact or cls_bpf.
core::Status attachFlowHashReset(const std::string& netns, const std::string& ifname);

// Whether the port's ingress holds our reset (its slot holds a program named fc_hash_reset).
// kNotFound: no such namespace or interface.
core::Result<bool> hasFlowHashReset(const std::string& netns, const std::string& ifname);

}  // namespace fabric_chaos::sys
