#include "tests/vm/vm_support.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {

std::string vmCache() {
  const char* env = std::getenv("FC_VM_CACHE");
  return env != nullptr && *env != '\0' ? env : "/var/cache/fabric-chaos/vm";
}

std::string missingVmPrerequisite() {
  if (geteuid() != 0) return "the vm tier needs root (taps, namespaces, qemu 9p passthrough)";
  if (!std::filesystem::exists("/dev/net/tun")) return "the vm tier needs /dev/net/tun (taps)";
  if (runShell("command -v qemu-system-x86_64 >/dev/null && command -v ip >/dev/null").exit_code !=
      0) {
    return "the vm tier needs qemu-system-x86_64 and iproute2 (deploy/install-deps.sh)";
  }
  const std::string cache = vmCache();
  if (!std::filesystem::exists(cache + "/vmlinuz") ||
      !std::filesystem::exists(cache + "/initramfs.cpio.gz")) {
    return "no guest kernel in " + cache + ": run deploy/vm/fetch-kernel.sh " + cache;
  }
  return "";
}

namespace {

// Strips a leading "@A-B " (guest uptime in seconds before and after the look) off a watched
// value into the line's guest_from_ms/guest_to_ms.
void takeGuestStamp(ConsoleWatcher::Line& line) {
  static const std::regex stamp(R"(^@([0-9]+(?:\.[0-9]+)?)-([0-9]+(?:\.[0-9]+)?) ?)");
  std::smatch match;
  if (!std::regex_search(line.text, match, stamp)) return;
  line.guest_from_ms = std::stod(match[1]) * 1000;
  line.guest_to_ms = std::stod(match[2]) * 1000;
  line.text = match.suffix();
}

}  // namespace

ConsoleWatcher::ConsoleWatcher(std::string path, std::string marker)
    : path_(std::move(path)), marker_(std::move(marker)) {}

std::optional<std::string> ConsoleWatcher::markedIn(const std::string& line) const {
  const auto at = line.find(marker_);
  if (at == std::string::npos) return std::nullopt;
  std::string value = line.substr(at + marker_.size());
  while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
  return value;
}

void ConsoleWatcher::poll() {
  std::ifstream in(path_);
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t last_newline = chunk.rfind('\n');
  if (last_newline == std::string::npos) return;
  offset_ += last_newline + 1;
  const int64_t now = steadyNowNs();
  const int64_t wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  size_t start = 0;
  while (start <= last_newline) {
    size_t end = chunk.find('\n', start);
    std::string line = chunk.substr(start, end - start);
    while (!line.empty() && line.back() == '\r') line.pop_back();
    all_.push_back({now, wall_ms, line});
    if (auto value = markedIn(line)) {
      WatchedLine watched;
      watched.seen_ns = now;
      watched.seen_wall_ms = wall_ms;
      watched.text = *value;
      takeGuestStamp(watched);
      watched.console_index = all_.size() - 1;
      watched_.push_back(std::move(watched));
    }
    start = end + 1;
  }
}

int64_t ConsoleWatcher::waitFor(const std::function<bool(const std::string&)>& pred,
                                int timeout_ms) {
  const int64_t deadline = steadyNowNs() + int64_t{timeout_ms} * 1000000;
  const size_t from = watched_.size();
  while (steadyNowNs() < deadline) {
    poll();
    for (size_t i = from; i < watched_.size(); ++i) {
      if (pred(watched_[i].text)) return watched_[i].seen_ns;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

double ConsoleWatcher::spanOf(const std::function<bool(const std::string&)>& pred, size_t from) {
  poll();
  int64_t first = 0;
  for (const WatchedLine& line : watched_) {
    if (line.console_index < from) continue;
    const bool holds = pred(line.text);
    if (holds && first == 0) first = line.seen_ns;
    if (!holds && first != 0) return static_cast<double>(line.seen_ns - first) / 1e6;
  }
  return 0;
}

std::optional<ConsoleWatcher::GuestSpan> ConsoleWatcher::guestSpanOf(
    const std::function<bool(const std::string&)>& pred, size_t from) {
  poll();
  std::optional<size_t> before;  // the last line before the state
  std::optional<size_t> first;   // the first and last lines that show it
  size_t last = 0;
  for (size_t i = 0; i < watched_.size(); ++i) {
    const WatchedLine& line = watched_[i];
    if (line.console_index < from || line.guest_from_ms < 0) continue;
    const bool holds = pred(line.text);
    if (!first) {
      if (holds && before) first = last = i;
      if (!holds) before = i;
      continue;
    }
    if (holds) {
      last = i;
      continue;
    }
    GuestSpan span;
    span.at_least_ms = std::max(0.0, watched_[last].guest_from_ms - watched_[*first].guest_to_ms);
    span.at_most_ms = line.guest_to_ms - watched_[*before].guest_from_ms;
    return span;
  }
  return std::nullopt;
}

std::string ConsoleWatcher::latest() {
  poll();
  return watched_.empty() ? "" : watched_.back().text;
}

std::vector<ConsoleWatcher::Line> ConsoleWatcher::watched() {
  poll();
  return std::vector<Line>(watched_.begin(), watched_.end());
}

size_t ConsoleWatcher::mark() {
  poll();
  return all_.size();
}

ConsoleWatcher::Line ConsoleWatcher::waitForText(const std::string& text, size_t from,
                                                 int timeout_ms) {
  const int64_t deadline = steadyNowNs() + int64_t{timeout_ms} * 1000000;
  do {
    poll();
    for (size_t i = from; i < all_.size(); ++i) {
      if (all_[i].text.find(text) != std::string::npos) return all_[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (steadyNowNs() < deadline);
  return Line{};
}

std::string panickedGuest(const std::string& state_dir, const std::vector<std::string>& vms) {
  for (const std::string& vm : vms) {
    std::ifstream in(state_dir + "/vm/" + vm + ".console.log");
    const std::string console((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (console.find("Kernel panic") != std::string::npos) return vm;
  }
  return "";
}

std::string guestPanicLine(const std::string& state_dir, const std::string& vm) {
  std::ifstream in(state_dir + "/vm/" + vm + ".console.log");
  std::string line;
  std::string oops;
  std::string rxe;
  while (std::getline(in, line)) {
    if (oops.empty() && line.find("Oops") != std::string::npos) oops = line;
    if (rxe.empty() && !oops.empty() && line.find("[rdma_rxe]") != std::string::npos) rxe = line;
  }
  return oops + (rxe.empty() ? "" : " ... " + rxe);
}

std::string shellQuoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fabric_chaos::testing
