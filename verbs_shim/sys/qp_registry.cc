#include "verbs_shim/sys/qp_registry.h"

#include <infiniband/verbs.h>

#include <mutex>
#include <unordered_map>

namespace fabric_chaos::verbs_shim {
namespace {

struct Entry {
  ibv_qp* qp = nullptr;
  bool errored = false;
};

int modifyToError(ibv_qp* qp) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

std::mutex g_mutex;
std::unordered_map<uint32_t, Entry>& qps() {
  static auto* map = new std::unordered_map<uint32_t, Entry>();  // outlives static destructors
  return *map;
}
QpErrorAction g_action = modifyToError;
int64_t g_errored = 0;

}  // namespace

std::optional<ShimQpType> shimQpTypeOf(const ibv_qp* qp) {
  switch (qp->qp_type) {
    case IBV_QPT_RC:
      return ShimQpType::kRc;
    case IBV_QPT_UC:
      return ShimQpType::kUc;
    case IBV_QPT_UD:
      return ShimQpType::kUd;
    default:
      return std::nullopt;
  }
}

void registerQp(ibv_qp* qp) {
  if (qp == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  qps()[qp->qp_num] = Entry{qp, false};
}

void unregisterQp(ibv_qp* qp) {
  if (qp == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = qps().find(qp->qp_num);
  if (it != qps().end() && it->second.qp == qp) qps().erase(it);
}

std::optional<ShimQpType> qpTypeOf(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = qps().find(qp_num);
  return it == qps().end() ? std::nullopt : shimQpTypeOf(it->second.qp);
}

bool moveQpToError(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = qps().find(qp_num);
  if (it == qps().end()) return false;
  if (it->second.errored) return true;
  if (g_action(it->second.qp) != 0) return false;
  it->second.errored = true;
  ++g_errored;
  return true;
}

void setQpErrorAction(QpErrorAction action) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_action = action != nullptr ? action : modifyToError;
}

int64_t qpsErrored() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_errored;
}

}  // namespace fabric_chaos::verbs_shim
