#pragma once
// Where token secrets get their randomness: the kernel's CSPRNG through getrandom(2), behind an
// adapter so that secret generation is testable with a fake that repeats or fails. A failure is a
// Status (kInternal with errno as origin), never a weak fallback. Any thread may call fill().

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"

namespace fabric_chaos::auth {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // Fills out[0..size) with cryptographically secure random bytes, or fails without partial use.
  virtual core::Status fill(uint8_t* out, size_t size) = 0;
};

// getrandom(2) from the urandom pool, waiting for the pool to be initialised.
std::unique_ptr<RandomSource> makeSystemRandomSource();

}  // namespace fabric_chaos::auth
