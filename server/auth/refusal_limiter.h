#pragma once
// Unauthenticated refusals (401) per source address, so that anyone who can reach serve's port
// can neither grow the database nor hold the store: the first refusal from a source in a window
// is audited as it is, the rest of that window become one summary row with their count, and a
// source past max_per_window is answered 429 without its credential being looked up until the
// window ends. Pure (the caller passes the time); thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace fabric_chaos::auth {

struct RefusalLimiterOptions {
  int64_t window_ms = 60000;
  int64_t max_per_window = 30;  // refusals per source and window before 429
  // Sources tracked at once; past it the window that ends first is closed early (its summary
  // written) to make room, so memory stays bounded whatever the addresses.
  size_t max_sources = 4096;
};

class RefusalLimiter {
 public:
  enum class Verdict {
    kRecord,  // the first refusal of the source's window: audit it in full
    kCount,   // counted into the window's summary; no row now
  };
  struct Summary {
    std::string source;
    int64_t window_start_ms = 0;
    int64_t refusals = 0;   // refused after the recorded first one
    int64_t throttled = 0;  // answered 429 without a credential check
  };

  explicit RefusalLimiter(RefusalLimiterOptions options = {}) : options_(options) {}

  Verdict refused(const std::string& source, int64_t now_ms);
  // The Retry-After (ms) when requests from source are to be answered 429 now, and counts it;
  // nullopt when the source may present credentials.
  std::optional<int64_t> throttle(const std::string& source, int64_t now_ms);
  // The windows that ended by now_ms (every window when all) and had more than their first
  // refusal, removed from the limiter: one audit row each. Cheap when none has ended.
  std::vector<Summary> takeEnded(int64_t now_ms, bool all = false);

 private:
  struct Window {
    int64_t start_ms = 0;
    int64_t refusals = 0;  // including the recorded first
    int64_t throttled = 0;
  };
  void closeEnded(int64_t now_ms, bool all, std::vector<Summary>* out);
  void closeEarliest(std::vector<Summary>* out);

  const RefusalLimiterOptions options_;
  std::mutex mu_;
  std::map<std::string, Window> windows_;
  std::vector<Summary> closed_;  // closed early for room, or by a new window: not yet taken
  int64_t earliest_end_ms_ = INT64_MAX;
};

}  // namespace fabric_chaos::auth
