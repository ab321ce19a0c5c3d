#pragma once
// Helpers for the loopback TCP tests: free ports, a thread-safe line sink for a rank's report
// stream, and waiting on a condition with a deadline (a missed deadline is a failure, not a skip).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

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

}  // namespace fabric_chaos::workload::testing
