#include "injectors/sys/emitters.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "injectors/sys/proc_stat.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;
namespace fs = std::filesystem;

std::string bootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// A file name for a key: its readable part and a stable hash, so distinct keys never share one.
std::string fileStem(const std::string& key) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  std::string readable;
  for (unsigned char c : key) {
    hash = (hash ^ c) * 1099511628211ull;
    if (readable.size() < 48) readable += std::isalnum(c) || c == '-' || c == '.' ? char(c) : '_';
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return readable + "-" + hex;
}

std::string tailOf(const std::string& path, size_t bytes = 600) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool waitUntil(const std::function<bool()>& done, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// One emitter this process started. Its reports are read by the owner thread.
struct Running {
  std::string key;
  std::string record_path;
  std::string log_path;
  std::unique_ptr<ChildProcess> child;
  std::mutex child_mu;  // ChildProcess::wait is not for two threads at once

  std::mutex mu;
  std::condition_variable cv;  // a report arrived, or stdout closed
  json last_report;
  int reports = 0;
  std::string partial;
  bool stdout_closed = false;
};

class ProcessEmitters : public Emitters {
 public:
  ProcessEmitters(std::string record_dir, std::unique_ptr<ProcessLauncher> launcher)
      : record_dir_(std::move(record_dir)), launcher_(std::move(launcher)) {
    std::error_code ec;
    fs::create_directories(record_dir_, ec);
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
    owner_ = std::thread([this] { ownerLoop(); });
  }

  ~ProcessEmitters() override {
    std::vector<std::string> keys;
    {
      std::lock_guard lock(mu_);
      for (const auto& [key, running] : running_) keys.push_back(key);
    }
    for (const std::string& key : keys) (void)stop(key, 1000);
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    wake();
    owner_.join();
    for (int fd : wake_) {
      if (fd >= 0) ::close(fd);
    }
  }

  Status start(const EmitterSpec& spec) override {
    if (spec.key.empty() || spec.argv.empty()) {
      return Status(StatusCode::kInvalidArgument, "an emitter needs a key and a command");
    }
    if (auto existing = find(spec.key)) {
      if (runningNow(*existing)) return Status::ok();
      (void)stop(spec.key, 0);  // ended by itself: clear it and start again
    } else {
      (void)stopFromRecord(spec.key, 1000);  // a previous incarnation's
    }

    std::promise<core::Result<std::shared_ptr<Running>>> spawned;
    auto result = spawned.get_future();
    {
      std::lock_guard lock(mu_);
      spawns_.push_back({spec, std::move(spawned)});
    }
    wake();
    auto running = result.get();
    if (!running.isOk()) return running.status();
    std::shared_ptr<Running> emitter = running.value();

    std::unique_lock lock(emitter->mu);
    const bool ready =
        emitter->cv.wait_for(lock, std::chrono::milliseconds(spec.ready_timeout_ms),
                             [&] { return emitter->reports > 0 || emitter->stdout_closed; });
    if (ready && emitter->reports > 0) return Status::ok();
    lock.unlock();
    auto ended = stop(spec.key, 200);
    std::string why =
        ready ? "it exited"
              : "it reported nothing within " + std::to_string(spec.ready_timeout_ms) + " ms";
    if (ended.isOk() && ended->exit_code)
      why += " (status " + std::to_string(*ended->exit_code) + ")";
    const std::string tail = ended.isOk() ? ended->log_tail : "";
    return Status(StatusCode::kUnavailable, "emitter " + spec.key + " did not start: " + why +
                                                (tail.empty() ? "" : ": " + tail));
  }

  core::Result<EmitterState> state(const std::string& key) override {
    auto emitter = find(key);
    if (!emitter) return Status(StatusCode::kNotFound, "no emitter " + key + " is running here");
    return describe(*emitter);
  }

  core::Result<EmitterState> stop(const std::string& key, int grace_ms) override {
    auto emitter = find(key);
    if (!emitter) return stopFromRecord(key, grace_ms);
    {
      std::lock_guard child_lock(emitter->child_mu);
      if (emitter->child->wait(0).status().code() == StatusCode::kTimeout) {
        (void)emitter->child->signal(SIGTERM);
        auto ended = emitter->child->wait(grace_ms);
        if (!ended.isOk()) {
          (void)emitter->child->signal(SIGKILL);
          (void)emitter->child->wait(5000);
        }
      }
    }
    {
      // Its last report is in the pipe: the owner thread reads up to the end.
      std::unique_lock lock(emitter->mu);
      emitter->cv.wait_for(lock, std::chrono::milliseconds(1000),
                           [&] { return emitter->stdout_closed; });
    }
    EmitterState final_state = describe(*emitter);
    {
      std::lock_guard lock(mu_);
      running_.erase(key);
    }
    std::error_code ec;
    fs::remove(emitter->record_path, ec);
    return final_state;
  }

  int stopRecorded(int grace_ms) override {
    int stopped = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(record_dir_, ec)) {
      if (entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path());
      const json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
      const std::string key = record.is_object() ? record.value("key", "") : "";
      if (key.empty() || find(key)) continue;
      if (stopRecordFile(entry.path().string(), record, grace_ms)) ++stopped;
    }
    return stopped;
  }

 private:
  struct SpawnRequest {
    EmitterSpec spec;
    std::promise<core::Result<std::shared_ptr<Running>>> result;
  };

  std::shared_ptr<Running> find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = running_.find(key);
    return it == running_.end() ? nullptr : it->second;
  }

  static bool runningNow(Running& emitter) {
    std::lock_guard child_lock(emitter.child_mu);
    return emitter.child->wait(0).status().code() == StatusCode::kTimeout;
  }

  static EmitterState describe(Running& emitter) {
    EmitterState state;
    state.pid = emitter.child->pid();
    {
      std::lock_guard child_lock(emitter.child_mu);
      auto ended = emitter.child->wait(0);
      state.running = !ended.isOk() && ended.status().code() == StatusCode::kTimeout;
      if (ended.isOk()) state.exit_code = ended.value();
    }
    {
      std::lock_guard lock(emitter.mu);
      state.last_report = emitter.last_report;
      state.reports = emitter.reports;
    }
    if (!state.running) state.log_tail = tailOf(emitter.log_path);
    return state;
  }

  std::string recordPath(const std::string& key) const {
    return record_dir_ + "/" + fileStem(key) + ".json";
  }

  core::Result<EmitterState> stopFromRecord(const std::string& key, int grace_ms) {
    const std::string path = recordPath(key);
    std::ifstream in(path);
    if (!in) return EmitterState{};
    const json record = json::parse(in, nullptr, /*allow_exceptions=*/false);
    EmitterState state;
    state.pid = record.is_object() ? record.value("pid", 0) : 0;
    stopRecordFile(path, record, grace_ms);
    state.log_tail = tailOf(record_dir_ + "/" + fileStem(key) + ".log");
    return state;
  }

  // Stops the process a record names if it is still that process; removes the record. Whether
  // it was running.
  static bool stopRecordFile(const std::string& path, const json& record, int grace_ms) {
    std::error_code ec;
    const pid_t pid = record.is_object() ? record.value("pid", 0) : 0;
    const uint64_t start_time = record.is_object() ? record.value("start_time", uint64_t{0}) : 0;
    const bool same_boot = record.is_object() && record.value("boot_id", "") == bootId();
    auto alive = [&] {
      auto stat = readProcessStat(pid);
      return stat && !stat->zombie() && stat->start_time == start_time;
    };
    bool was_running = false;
    if (pid > 0 && same_boot && alive()) {
      was_running = true;
      ::kill(pid, SIGTERM);
      if (!waitUntil([&] { return !alive(); }, grace_ms)) {
        ::kill(pid, SIGKILL);
        waitUntil([&] { return !alive(); }, 5000);
      }
    }
    fs::remove(path, ec);
    return was_running;
  }

  void wake() {
    if (wake_[1] < 0) return;
    const char byte = 1;
    ssize_t ignored = ::write(wake_[1], &byte, 1);
    (void)ignored;
  }

  // The thread every emitter is forked from (PR_SET_PDEATHSIG follows it) and that reads their
  // reports.
  void ownerLoop() {
    while (true) {
      std::deque<SpawnRequest> spawns;
      std::vector<std::shared_ptr<Running>> reading;
      {
        std::lock_guard lock(mu_);
        if (stopping_) return;
        spawns.swap(spawns_);
        for (const auto& [key, emitter] : running_) {
          std::lock_guard emitter_lock(emitter->mu);
          if (!emitter->stdout_closed) reading.push_back(emitter);
        }
      }
      for (SpawnRequest& request : spawns) request.result.set_value(spawn(request.spec));
      if (!spawns.empty()) continue;  // poll the new ones too

      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}};
      for (const auto& emitter : reading) fds.push_back({emitter->child->stdoutFd(), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 500) < 0 && errno != EINTR) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (fds[0].revents != 0) {
        char drain[64];
        while (::read(wake_[0], drain, sizeof(drain)) > 0) {
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) readReports(*reading[i - 1]);
      }
    }
  }

  core::Result<std::shared_ptr<Running>> spawn(const EmitterSpec& spec) {
    auto emitter = std::make_shared<Running>();
    emitter->key = spec.key;
    emitter->record_path = recordPath(spec.key);
    emitter->log_path = record_dir_ + "/" + fileStem(spec.key) + ".log";
    std::error_code ec;
    fs::remove(emitter->log_path, ec);
    auto child = launcher_->spawn({spec.argv, spec.netns, true, emitter->log_path});
    if (!child.isOk()) return child.status().withContext("starting emitter " + spec.key);
    emitter->child = std::move(child.value());
    const pid_t pid = emitter->child->pid();
    const auto stat = readProcessStat(pid);
    const json record = {
        {"key", spec.key},     {"pid", pid},        {"start_time", stat ? stat->start_time : 0},
        {"boot_id", bootId()}, {"argv", spec.argv}, {"netns", spec.netns}};
    {
      std::ofstream out(emitter->record_path + ".tmp");
      out << record.dump() << "\n";
    }
    fs::rename(emitter->record_path + ".tmp", emitter->record_path, ec);
    if (ec) {
      (void)emitter->child->signal(SIGKILL);
      (void)emitter->child->wait(5000);
      return Status(StatusCode::kInternal, "cannot record emitter " + spec.key + " in " +
                                               record_dir_ + ": " + ec.message());
    }
    std::lock_guard lock(mu_);
    running_[spec.key] = emitter;
    return emitter;
  }

  static void readReports(Running& emitter) {
    char buf[4096];
    const ssize_t n = ::read(emitter.child->stdoutFd(), buf, sizeof(buf));
    std::lock_guard lock(emitter.mu);
    if (n <= 0) {
      if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        emitter.stdout_closed = true;
        emitter.cv.notify_all();
      }
      return;
    }
    emitter.partial.append(buf, static_cast<size_t>(n));
    size_t newline;
    while ((newline = emitter.partial.find('\n')) != std::string::npos) {
      const std::string line = emitter.partial.substr(0, newline);
      emitter.partial.erase(0, newline + 1);
      json report = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (report.is_discarded()) continue;
      emitter.last_report = std::move(report);
      ++emitter.reports;
    }
    if (emitter.partial.size() > 65536) emitter.partial.clear();  // no newline in sight
    emitter.cv.notify_all();
  }

  const std::string record_dir_;
  std::unique_ptr<ProcessLauncher> launcher_;
  int wake_[2] = {-1, -1};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Running>> running_;
  std::deque<SpawnRequest> spawns_;
  bool stopping_ = false;
  std::thread owner_;
};

}  // namespace

nlohmann::json toJson(const EmitterState& state) {
  nlohmann::json out = {
      {"running", state.running}, {"pid", state.pid}, {"report", state.last_report}};
  if (state.exit_code) out["exit_code"] = *state.exit_code;
  if (!state.log_tail.empty()) out["log"] = state.log_tail;
  return out;
}

std::unique_ptr<Emitters> makeProcessEmitters(std::string record_dir,
                                              std::unique_ptr<ProcessLauncher> launcher) {
  return std::make_unique<ProcessEmitters>(std::move(record_dir), std::move(launcher));
}

}  // namespace fabric_chaos::sys
