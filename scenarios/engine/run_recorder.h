#pragma once
// Writes a run's events, state changes and journal marks on a thread of its own, in the order
// they were posted, so that the fault timeline never waits for an fsynced commit between two
// scheduled instants (each costs ~5 ms here, and one that meets a WAL checkpoint or the samples'
// writer ~100 ms: the state change to "injecting" made the first fault of a run that late). Journal
// *intents* are never posted here: they must be durable before a fault is applied. A lost mark is
// harmless: an entry left "applied" whose fault was reverted is reverted again (idempotently) at
// the next start. flush() returns once everything posted before it is stored; the destructor
// flushes. Any thread may post.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace fabric_chaos::scenarios {

class RunRecorder {
 public:
  explicit RunRecorder(store::Store& store);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  void event(store::EventRecord record);
  void journalMark(int64_t entry_id, std::string state);
  // The run's state (Store::setRunState), for GET /v1/runs and its transitions; the engine's own
  // view of the state is in memory and changes at once.
  void runState(int64_t run_id, std::string state);
  // Telemetry points the run takes besides the switches' (a traffic fault's generators' counters,
  // read at its health checks): Store::appendTelemetry, as one batch.
  void telemetry(int64_t run_id, std::vector<core::TelemetryPoint> points);
  void flush();

 private:
  enum class ItemKind { kEvent, kJournalMark, kRunState, kTelemetry };
  struct Item {
    ItemKind kind = ItemKind::kEvent;
    store::EventRecord event;
    int64_t id = 0;  // journal entry or run
    std::string state;
    std::vector<core::TelemetryPoint> points = {};
  };
  static core::Status write(store::Store& store, const Item& item);
  static std::string describe(const Item& item);
  void post(Item item);
  void writerLoop();

  store::Store& store_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  uint64_t posted_ = 0;
  uint64_t written_ = 0;
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace fabric_chaos::scenarios
