#pragma once
// Helpers for the rank tests (loopback TCP here, verbs in tests/vm): free ports, a thread-safe line
// sink for a rank's report stream, whole ranks as threads, picking samples and events out of a
// report, and waiting on a condition with a deadline (a missed deadline is a failure, not a skip).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "workload/rank.h"
#include "workload/report.h"

namespace fabric_chaos::workload::testing {

// n distinct ports that were free a moment ago on 127.0.0.1 (all bound at once, then released).
inline std::vector<int> freePorts(int n) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return {};
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

// A streambuf that many threads may read while one writes; lines() returns complete lines.
class LineSink : public std::streambuf {
 public:
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl = buf_.find('\n'); nl != std::string::npos; nl = buf_.find('\n', start)) {
      out.push_back(buf_.substr(start, nl - start));
      start = nl + 1;
    }
    return out;
  }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mu_);
    return buf_;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (ch == traits_type::eof()) return traits_type::not_eof(ch);
    std::lock_guard<std::mutex> lock(mu_);
    buf_.push_back(static_cast<char>(ch));
    return ch;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mu_);
    buf_.append(s, static_cast<size_t>(n));
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::string buf_;
};

// Decodes every line; a line that does not decode becomes an event of kind "undecodable".
inline std::vector<ReportLine> decodeAll(const std::vector<std::string>& lines) {
  std::vector<ReportLine> out;
  for (const auto& line : lines) {
    auto decoded = decodeReportLine(line);
    if (decoded.isOk()) {
      out.push_back(std::move(decoded.value()));
    } else {
      ReportLine bad;
      bad.type = ReportLine::Type::kEvent;
      bad.kind = "undecodable";
      bad.detail = {{"line", line}, {"error", decoded.status().toString()}};
      out.push_back(std::move(bad));
    }
  }
  return out;
}

// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
inline bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

// One rank run as a thread: its options, its report stream and how to stop or disturb it.
struct RankRun {
  RankOptions options;
  RankHooks hooks;
  LineSink sink;
  std::unique_ptr<std::ostream> out;
  std::atomic<bool> stop{false};
  std::atomic<bool> abort_flag{false};
  std::atomic<int> exit_code{-1};
  std::thread thread;

  std::vector<ReportLine> report() const { return decodeAll(sink.lines()); }
};

// Whole ranks as threads of the test; a derived ring fills runs_ in its constructor. Stops and
// joins every rank when destroyed.
class RankThreads {
 public:
  ~RankThreads() { stopAll(); }

  RankRun& rank(int r) { return *runs_[r]; }
  int world() const { return static_cast<int>(runs_.size()); }

  void start() {
    for (auto& run : runs_) {
      run->hooks.abort_connections = &run->abort_flag;
      RankRun* p = run.get();
      run->thread =
          std::thread([p] { p->exit_code = runRank(p->options, *p->out, p->stop, p->hooks); });
    }
  }
  void stopAll() {
    for (auto& run : runs_) run->stop = true;
    for (auto& run : runs_) {
      if (run->thread.joinable()) run->thread.join();
    }
  }

 protected:
  std::vector<std::unique_ptr<RankRun>> runs_;
};

inline std::vector<RawSample> samplesOf(const std::vector<ReportLine>& lines) {
  std::vector<RawSample> out;
  for (const auto& l : lines) {
    if (l.type == ReportLine::Type::kSamples) {
      out.insert(out.end(), l.samples.begin(), l.samples.end());
    }
  }
  return out;
}

inline std::vector<ReportLine> eventsOf(const std::vector<ReportLine>& lines,
                                        const std::string& kind) {
  std::vector<ReportLine> out;
  for (const auto& l : lines) {
    if (l.type == ReportLine::Type::kEvent && l.kind == kind) out.push_back(l);
  }
  return out;
}

// Samples whose iteration is above `iteration`.
inline size_t samplesAfter(const std::vector<ReportLine>& lines, int64_t iteration) {
  size_t n = 0;
  for (const auto& s : samplesOf(lines)) n += s.iteration > iteration ? 1 : 0;
  return n;
}

}  // namespace fabric_chaos::workload::testing
