// The real RandomSource: getrandom(2). Blocks only until the kernel's pool is initialised at boot.

#include <sys/random.h>

#include <cerrno>

#include "server/auth/random_source.h"

namespace fabric_chaos::auth {
namespace {

class SystemRandomSource : public RandomSource {
 public:
  core::Status fill(uint8_t* out, size_t size) override {
    size_t done = 0;
    while (done < size) {
      // Requests up to 256 bytes never return short once the pool is ready, but a signal can
      // interrupt a larger one: loop on partial reads and EINTR.
      ssize_t n = getrandom(out + done, size - done, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        core::Status failed = core::errnoStatus(errno, "getrandom");
        return core::Status(core::StatusCode::kInternal, failed.message(), failed.origin());
      }
      done += static_cast<size_t>(n);
    }
    return core::Status::ok();
  }
};

}  // namespace

std::unique_ptr<RandomSource> makeSystemRandomSource() {
  return std::make_unique<SystemRandomSource>();
}

}  // namespace fabric_chaos::auth
