#pragma once
// completion_delay's held completions, per CQ: a batch the shim took from the provider and keeps
// from the program until its release time, as a stalled NIC or PCIe link would. While a CQ holds
// some, polls return nothing (the provider's later completions stay queued behind them, so order
// is kept); once due they are returned first. Nothing is dropped: disarming does not discard
// them, and only destroying the CQ does.
// A program that sleeps in ibv_get_cq_event would not wake for completions it was already
// notified of, so the shim's ibv_get_cq_event returns a CQ whose held batch falls due as an
// event of its own, and ibv_ack_cq_events keeps those out of libibverbs' count. Thread-safe.

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

namespace fabric_chaos::verbs_shim {

// True when any CQ holds completions: the unarmed poll path's only extra test.
bool anyHeld();
// Keeps wc[0..n) for `cq` until release_ns (after whatever it already holds).
void hold(ibv_cq* cq, const ibv_wc* wc, int n, int64_t release_ns);
// -1: `cq` holds nothing (poll the provider). Otherwise the number of held completions copied
// to wc (at most num_entries), 0 while they are not due.
int takeHeld(ibv_cq* cq, int num_entries, ibv_wc* wc, int64_t now_ns);
// The CQ on `channel` whose held batch falls due first, and when.
struct DueCq {
  ibv_cq* cq = nullptr;
  int64_t release_ns = 0;
};
std::optional<DueCq> nextDue(const ibv_comp_channel* channel);
// A completion event the shim returned for `cq` (not the kernel); ackEvents says how many of
// `n` acknowledgements are the kernel's.
void noteSyntheticEvent(ibv_cq* cq);
unsigned int kernelAcks(ibv_cq* cq, unsigned int n);
void forgetCq(ibv_cq* cq);
int64_t completionsHeld();  // held so far in all, for the status answer

}  // namespace fabric_chaos::verbs_shim
