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
  Item item;
  item.event = std::move(record);
  post(std::move(item));
}

void RunRecorder::journalMark(int64_t entry_id, std::string state) {
  Item item;
  item.is_mark = true;
  item.entry_id = entry_id;
  item.state = std::move(state);
  post(std::move(item));
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
    core::Status status = item.is_mark ? store_.journalMark(item.entry_id, item.state)
                                       : store_.appendEvent(item.event);
    if (!status.isOk()) {
      core::logError(std::string("run recorder: ") +
                     (item.is_mark ? "journal mark " + item.state + " of entry " +
                                         std::to_string(item.entry_id)
                                   : "event " + item.event.kind) +
                     ": " + status.toString());
    }
    lock.lock();
    ++written_;
    cv_.notify_all();
  }
}

}  // namespace fabric_chaos::scenarios
