#include "scenarios/engine/run_recorder.h"

#include "core/log.h"

namespace fabric_chaos::scenarios {

RunRecorder::RunRecorder(store::Store& store) : store_(store) {
  writer_ = std::thread([this] { writerLoop(); });
}

RunRecorder::~RunRecorder() {
  flush();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void RunRecorder::event(store::EventRecord record) {
  post(Item{ItemKind::kEvent, std::move(record), 0, ""});
}

void RunRecorder::journalMark(int64_t entry_id, std::string state) {
  post(Item{ItemKind::kJournalMark, {}, entry_id, std::move(state)});
}

void RunRecorder::runState(int64_t run_id, std::string state) {
  post(Item{ItemKind::kRunState, {}, run_id, std::move(state)});
}

void RunRecorder::telemetry(int64_t run_id, std::vector<core::TelemetryPoint> points) {
  if (points.empty()) return;
  Item item{ItemKind::kTelemetry, {}, run_id, ""};
  item.points = std::move(points);
  post(std::move(item));
}

core::Status RunRecorder::write(store::Store& store, const Item& item) {
  switch (item.kind) {
    case ItemKind::kEvent:
      return store.appendEvent(item.event);
    case ItemKind::kJournalMark:
      return store.journalMark(item.id, item.state);
    case ItemKind::kRunState:
      return store.setRunState(item.id, item.state);
    case ItemKind::kTelemetry:
      return store.appendTelemetry(item.id, item.points);
  }
  return core::Status::ok();
}

std::string RunRecorder::describe(const Item& item) {
  switch (item.kind) {
    case ItemKind::kEvent:
      return "event " + item.event.kind;
    case ItemKind::kJournalMark:
      return "journal mark " + item.state + " of entry " + std::to_string(item.id);
    case ItemKind::kRunState:
      return "state " + item.state + " of run " + std::to_string(item.id);
    case ItemKind::kTelemetry:
      return std::to_string(item.points.size()) + " telemetry points of run " +
             std::to_string(item.id);
  }
  return "";
}

void RunRecorder::post(Item item) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(item));
    ++posted_;
  }
  cv_.notify_all();
}

void RunRecorder::flush() {
  std::unique_lock lock(mu_);
  const uint64_t target = posted_;
  cv_.wait(lock, [&] { return written_ >= target; });
}

void RunRecorder::writerLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything is written
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (core::Status status = write(store_, item); !status.isOk()) {
      core::logError("run recorder: " + describe(item) + ": " + status.toString());
    }
    lock.lock();
    ++written_;
    cv_.notify_all();
  }
}

}  // namespace fabric_chaos::scenarios
