#include "lab/frame_checksum.h"

#include <cstddef>

namespace fabric_chaos::lab {
namespace {

constexpr uint8_t kTcp = 6;
constexpr uint8_t kUdp = 17;

uint16_t read16(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint16_t>((f[at] << 8) | f[at + 1]);
}

// The one's-complement sum of bytes [at, at + length), big-endian 16-bit words, a last odd byte
// padded with zero.
uint64_t sumBytes(const std::vector<uint8_t>& f, size_t at, size_t length) {
  uint64_t sum = 0;
  size_t i = 0;
  for (; i + 1 < length; i += 2) sum += read16(f, at + i);
  if (i < length) sum += static_cast<uint64_t>(f[at + i]) << 8;
  return sum;
}

uint16_t fold(uint64_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

// Writes the checksum of the segment at [l4, l4 + length) over `pseudo` (the pseudo-header's sum).
bool writeChecksum(std::vector<uint8_t>& f, size_t l4, size_t length, uint8_t protocol,
                   uint64_t pseudo, bool ipv4) {
  const size_t field = l4 + (protocol == kTcp ? 16 : 6);
  if (field + 2 > f.size() || l4 + length > f.size() || length < (protocol == kTcp ? 20u : 8u)) {
    return false;
  }
  if (protocol == kUdp && ipv4 && read16(f, field) == 0) return false;  // sent without one
  f[field] = 0;
  f[field + 1] = 0;
  uint16_t checksum = fold(pseudo + sumBytes(f, l4, length));
  if (protocol == kUdp && checksum == 0) checksum = 0xffff;  // 0 means "none" for UDP
  f[field] = static_cast<uint8_t>(checksum >> 8);
  f[field + 1] = static_cast<uint8_t>(checksum & 0xff);
  return true;
}

}  // namespace

bool completeTransportChecksum(std::vector<uint8_t>& f) {
  size_t l3 = 14;
  if (f.size() < l3) return false;
  uint16_t ethertype = read16(f, 12);
  if (ethertype == 0x8100) {
    if (f.size() < 18) return false;
    ethertype = read16(f, 16);
    l3 = 18;
  }
  if (ethertype == 0x0800) {
    if (f.size() < l3 + 20 || (f[l3] >> 4) != 4) return false;
    const size_t header = static_cast<size_t>(f[l3] & 0x0f) * 4;
    const size_t total = read16(f, l3 + 2);
    const uint8_t protocol = f[l3 + 9];
    const bool fragment = (read16(f, l3 + 6) & 0x3fff) != 0;  // MF set or an offset
    if (header < 20 || total < header || l3 + total > f.size() || fragment ||
        (protocol != kTcp && protocol != kUdp)) {
      return false;
    }
    const size_t length = total - header;
    const uint64_t pseudo = sumBytes(f, l3 + 12, 8) + protocol + length;
    return writeChecksum(f, l3 + header, length, protocol, pseudo, true);
  }
  if (ethertype == 0x86DD) {
    if (f.size() < l3 + 40 || (f[l3] >> 4) != 6) return false;
    const size_t length = read16(f, l3 + 4);
    const uint8_t protocol = f[l3 + 6];
    if ((protocol != kTcp && protocol != kUdp) || l3 + 40 + length > f.size()) return false;
    const uint64_t pseudo = sumBytes(f, l3 + 8, 32) + length + protocol;
    return writeChecksum(f, l3 + 40, length, protocol, pseudo, false);
  }
  return false;
}

}  // namespace fabric_chaos::lab
