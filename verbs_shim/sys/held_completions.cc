#include "verbs_shim/sys/held_completions.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace fabric_chaos::verbs_shim {
namespace {

struct Held {
  std::deque<ibv_wc> completions;
  int64_t release_ns = 0;
  unsigned int synthetic_events = 0;  // returned by the shim, not yet acknowledged
};

std::mutex g_mutex;
std::atomic<int> g_holding{0};  // CQs with completions held
int64_t g_total = 0;

std::unordered_map<ibv_cq*, Held>& held() {
  static auto* map = new std::unordered_map<ibv_cq*, Held>();  // outlives static destructors
  return *map;
}

}  // namespace

bool anyHeld() { return g_holding.load(std::memory_order_relaxed) > 0; }

void hold(ibv_cq* cq, const ibv_wc* wc, int n, int64_t release_ns) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  Held& h = held()[cq];
  if (h.completions.empty()) g_holding.fetch_add(1, std::memory_order_relaxed);
  h.completions.insert(h.completions.end(), wc, wc + n);
  h.release_ns = std::max(h.release_ns, release_ns);
  g_total += n;
}

int takeHeld(ibv_cq* cq, int num_entries, ibv_wc* wc, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = held().find(cq);
  if (it == held().end() || it->second.completions.empty()) return -1;
  Held& h = it->second;
  if (now_ns < h.release_ns) return 0;
  int n = 0;
  while (n < num_entries && !h.completions.empty()) {
    wc[n++] = h.completions.front();
    h.completions.pop_front();
  }
  if (h.completions.empty()) {
    g_holding.fetch_sub(1, std::memory_order_relaxed);
    if (h.synthetic_events == 0) held().erase(it);
  }
  return n;
}

std::optional<DueCq> nextDue(const ibv_comp_channel* channel) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::optional<DueCq> best;
  for (auto& [cq, h] : held()) {
    if (h.completions.empty() || cq->channel != channel) continue;
    if (!best || h.release_ns < best->release_ns) best = DueCq{cq, h.release_ns};
  }
  return best;
}

void noteSyntheticEvent(ibv_cq* cq) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++held()[cq].synthetic_events;
}

unsigned int kernelAcks(ibv_cq* cq, unsigned int n) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = held().find(cq);
  if (it == held().end()) return n;
  const unsigned int ours = std::min(n, it->second.synthetic_events);
  it->second.synthetic_events -= ours;
  if (it->second.synthetic_events == 0 && it->second.completions.empty()) held().erase(it);
  return n - ours;
}

void forgetCq(ibv_cq* cq) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = held().find(cq);
  if (it == held().end()) return;
  if (!it->second.completions.empty()) g_holding.fetch_sub(1, std::memory_order_relaxed);
  held().erase(it);
}

int64_t completionsHeld() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_total;
}

}  // namespace fabric_chaos::verbs_shim
