#pragma once
// What the VM-lab end-to-end tests share (they run on the host and drive `fabric-chaos lab
// --kind vm`): the lab's prerequisites, the guests' serial consoles read as an observer
// independent of the agents (the guests print what they see, and the consoles are files on the
// host), and the guest kernel panics that the lab's Soft-RoCE can cause. One test thread.

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::testing {

std::string vmCache();  // $FC_VM_CACHE, or /var/cache/fabric-chaos/vm
// "" when this machine can boot the VM lab; otherwise what is missing.
std::string missingVmPrerequisite();

// In a test body: fails under CI=true, skips otherwise, when `missing` is not "".
#define FC_REQUIRE(missing_expr)                                         \
  do {                                                                   \
    std::string missing = (missing_expr);                                \
    if (!missing.empty()) {                                              \
      const char* ci = std::getenv("CI");                                \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << missing; \
      GTEST_SKIP() << missing;                                           \
    }                                                                    \
  } while (0)

// The lines a guest printed on its console, each with the host's steady and wall time when the
// test first read it. Lines starting a `marker` ("FC_QDISC ") are the watched ones: their values
// are what follows the marker. A value may start with the guest's own clock, "@A-B " (seconds of
// /proc/uptime read before and after the guest looked), which is kept apart from the value.
class ConsoleWatcher {
 public:
  struct Line {
    int64_t seen_ns = 0;       // steady clock; 0: no such line
    int64_t seen_wall_ms = 0;  // CLOCK_REALTIME, as run events are stamped
    std::string text;          // a watched line's value, or any line's whole text
    // The guest's uptime, in ms, just before and just after it looked (-1: not stamped).
    double guest_from_ms = -1;
    double guest_to_ms = -1;
  };
  // How long a state lasted by the guest's clock, bracketed by the lines around it: at least
  // from the first line that showed it to the last, at most from the line before the first to
  // the first line after the last. The bracket holds however slowly the guest's loop comes round.
  struct GuestSpan {
    double at_least_ms = 0;
    double at_most_ms = 0;
  };
  ConsoleWatcher(std::string path, std::string marker);

  // What follows the marker on `line`, if it has it.
  std::optional<std::string> markedIn(const std::string& line) const;
  // Reads what the guest appended since the last call.
  void poll();
  // Polls until a watched value read from now on satisfies pred; the time it was seen, or 0.
  int64_t waitFor(const std::function<bool(const std::string&)>& pred, int timeout_ms);
  // How long, in ms of the host's clock, the watched values read from console line `from` on
  // satisfied pred: from the first such line to the first after it that does not (0 if none).
  double spanOf(const std::function<bool(const std::string&)>& pred, size_t from);
  // The same span by the guest's clock, for stamped lines; nullopt unless a line before the state,
  // one in it and one after it were read from console line `from` on.
  std::optional<GuestSpan> guestSpanOf(const std::function<bool(const std::string&)>& pred,
                                       size_t from);
  // The latest watched value ("" before the first).
  std::string latest();
  // Every watched line read so far.
  std::vector<Line> watched();
  // How many console lines have been read: where the next one will be.
  size_t mark();
  // The first console line from index `from` on that contains `text` (polling until timeout_ms),
  // or a Line with seen_ns 0.
  Line waitForText(const std::string& text, size_t from, int timeout_ms);

 private:
  struct WatchedLine : Line {
    size_t console_index = 0;  // where in all_ it was printed
  };
  std::string path_;
  std::string marker_;
  size_t offset_ = 0;
  std::vector<WatchedLine> watched_;
  std::vector<Line> all_;
};

// The first of `vms` whose console (under state_dir/vm/) shows a kernel panic, or "".
std::string panickedGuest(const std::string& state_dir, const std::vector<std::string>& vms);
// The Oops line and the first rxe frame of a guest's panic, for messages.
std::string guestPanicLine(const std::string& state_dir, const std::string& vm);

// `text` as one word for sh, expanded by nobody (an --agent-command whose $(hostname) the guest's
// shell must see).
std::string shellQuoted(const std::string& text);

}  // namespace fabric_chaos::testing
