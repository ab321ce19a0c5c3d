#pragma once
// The QPs of a shim-loaded program, by number: a completion names only its QP's number, and
// cqe_error and qp_error must move that QP to the error state, as a NIC does when a work request
// fails. Fed by the shim's QP create and destroy wrappers, so it never holds a destroyed QP.
// Thread-safe; a QP is moved to error under the registry's lock, so a concurrent destroy waits.

#include <cstdint>
#include <optional>

#include "verbs_shim/plan.h"

struct ibv_qp;

namespace fabric_chaos::verbs_shim {

// The transport of a QP as filters name it; nullopt for types they do not (XRC, raw packet).
std::optional<ShimQpType> shimQpTypeOf(const ibv_qp* qp);

void registerQp(ibv_qp* qp);
void unregisterQp(ibv_qp* qp);
std::optional<ShimQpType> qpTypeOf(uint32_t qp_num);
// Moves the QP to IBV_QPS_ERR (the provider then flushes its outstanding work requests with
// wr_flush_err), once per QP; false when the QP is unknown or the modify failed.
bool moveQpToError(uint32_t qp_num);
// How a QP is moved to error: ibv_modify_qp by default; tests on fake QPs replace it.
using QpErrorAction = int (*)(ibv_qp*);
void setQpErrorAction(QpErrorAction action);
// QPs moved to error by the shim, for its status answer.
int64_t qpsErrored();

}  // namespace fabric_chaos::verbs_shim
