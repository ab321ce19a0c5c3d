#pragma once
// Big-endian 32-bit fields of the rings' wire handshakes (TCP and verbs), read and written byte by
// byte so that neither alignment nor the host's byte order matters. Pure; any thread.

#include <cstdint>

namespace fabric_chaos::workload {

inline void putU32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

inline uint32_t getU32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

}  // namespace fabric_chaos::workload
