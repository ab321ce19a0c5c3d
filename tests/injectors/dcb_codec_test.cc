// DCB netlink as bytes (injectors/sys/dcb_codec.h): the IEEE GET and SET requests byte for byte
// against the uapi layout, replies built here the way net/dcb/dcbnl.c writes them, and truncated,
// mutated and random input that must come back as an error without a read out of bounds.
#include "injectors/sys/dcb_codec.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace fabric_chaos::sys {
namespace {

using core::StatusCode;
using Bytes = std::vector<uint8_t>;

// The numbers the expected bytes below are written with.
static_assert(RTM_GETDCB == 78 && RTM_SETDCB == 79);
static_assert(DCB_CMD_IEEE_SET == 20 && DCB_CMD_IEEE_GET == 21);
static_assert(DCB_ATTR_IFNAME == 1 && DCB_ATTR_IEEE == 13 && DCB_ATTR_DCBX == 14);
static_assert(DCB_ATTR_IEEE_ETS == 1 && DCB_ATTR_IEEE_PFC == 2 && DCB_ATTR_IEEE_APP_TABLE == 3 &&
              DCB_ATTR_IEEE_PEER_PFC == 5);
static_assert(NLA_F_NESTED == 0x8000 && NLM_F_REQUEST == 1 && AF_UNSPEC == 0);

// Appends host-order integers and raw bytes; nests patch their length on close.
class Builder {
 public:
  Builder& u8(uint8_t v) { return raw(&v, 1); }
  Builder& u16(uint16_t v) { return raw(&v, 2); }
  Builder& u32(uint32_t v) { return raw(&v, 4); }
  Builder& u64(uint64_t v) { return raw(&v, 8); }
  Builder& zeros(size_t n) {
    bytes_.insert(bytes_.end(), n, 0);
    return *this;
  }
  Builder& raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return *this;
  }
  Builder& pad() { return zeros((4 - bytes_.size() % 4) % 4); }
  Builder& header(uint16_t type, uint16_t flags, uint32_t seq, uint32_t pid = 0) {
    return u32(0).u16(type).u16(flags).u32(seq).u32(pid);  // length set by finish()
  }
  Builder& dcb(uint8_t cmd) { return u8(AF_UNSPEC).u8(cmd).u16(0); }
  Builder& attr(uint16_t type, const Bytes& payload) {
    u16(static_cast<uint16_t>(4 + payload.size())).u16(type).raw(payload.data(), payload.size());
    return pad();
  }
  Builder& string(uint16_t type, const std::string& s) {
    Bytes payload(s.begin(), s.end());
    payload.push_back(0);
    return attr(type, payload);
  }
  Builder& open(uint16_t type) {
    nests_.push_back(bytes_.size());
    return u16(0).u16(type);
  }
  Builder& close() {
    const size_t start = nests_.back();
    nests_.pop_back();
    const auto len = static_cast<uint16_t>(bytes_.size() - start);
    std::memcpy(&bytes_[start], &len, 2);
    return *this;
  }
  // Sets nlmsg_len of the message starting at `start` to everything after it.
  Bytes finish(size_t start = 0) {
    const auto len = static_cast<uint32_t>(bytes_.size() - start);
    std::memcpy(&bytes_[start], &len, 4);
    return bytes_;
  }
  size_t size() const { return bytes_.size(); }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
  std::vector<size_t> nests_;
};

IeeePfc samplePfc() {
  IeeePfc pfc;
  pfc.pfc_cap = 8;
  pfc.pfc_en = 0x08;
  pfc.mbc = 1;
  pfc.delay = 0x1234;
  for (size_t i = 0; i < 8; ++i) {
    pfc.requests[i] = 0x0100000000000000ull + i;
    pfc.indications[i] = 1000 + i;
  }
  return pfc;
}

// struct ieee_pfc as the kernel lays it out, padding zero.
Bytes pfcBytes(const IeeePfc& pfc) {
  Builder b;
  b.u8(pfc.pfc_cap).u8(pfc.pfc_en).u8(pfc.mbc).zeros(1).u16(pfc.delay).zeros(2);
  for (uint64_t v : pfc.requests) b.u64(v);
  for (uint64_t v : pfc.indications) b.u64(v);
  return b.bytes();
}

// The reply dcbnl_ieee_fill() writes for a NIC with ETS and PFC: IFNAME, the IEEE nest (the
// kernel opens it without NLA_F_NESTED) with ETS, PFC, an empty APP table, PEER_PFC, then DCBX.
Bytes getReply(const IeeePfc& pfc, uint32_t seq, const IeeePfc& peer) {
  Builder b;
  b.header(RTM_GETDCB, NLM_F_REQUEST, seq, 4242)
      .dcb(DCB_CMD_IEEE_GET)
      .string(DCB_ATTR_IFNAME, "eth0");
  b.open(DCB_ATTR_IEEE);
  b.attr(DCB_ATTR_IEEE_ETS, Bytes(sizeof(ieee_ets), 0x5a));
  b.attr(DCB_ATTR_IEEE_PFC, pfcBytes(pfc));
  b.open(DCB_ATTR_IEEE_APP_TABLE).close();
  b.attr(DCB_ATTR_IEEE_PEER_PFC, pfcBytes(peer));
  b.close();
  b.attr(DCB_ATTR_DCBX, Bytes{DCB_CAP_DCBX_VER_IEEE});
  return b.finish();
}

// A reply whose last bytes are the PFC attribute: any cut of it loses part of PFC.
Bytes minimalGetReply(const IeeePfc& pfc, uint32_t seq) {
  Builder b;
  b.header(RTM_GETDCB, NLM_F_REQUEST, seq).dcb(DCB_CMD_IEEE_GET);
  b.open(DCB_ATTR_IEEE).attr(DCB_ATTR_IEEE_PFC, pfcBytes(pfc)).close();
  return b.finish();
}

Bytes setReply(uint8_t status, uint32_t seq) {
  Builder b;
  b.header(RTM_SETDCB, NLM_F_REQUEST, seq).dcb(DCB_CMD_IEEE_SET).attr(DCB_ATTR_IEEE, {status});
  return b.finish();
}

void setLength(Bytes& message, uint32_t len) {
  if (message.size() >= 4) std::memcpy(message.data(), &len, 4);
}

TEST(DcbCodecLayout, PfcBytesHelperIsTheUapiStruct) {
  const IeeePfc pfc = samplePfc();
  ieee_pfc raw;
  std::memset(&raw, 0, sizeof(raw));
  raw.pfc_cap = pfc.pfc_cap;
  raw.pfc_en = pfc.pfc_en;
  raw.mbc = pfc.mbc;
  raw.delay = pfc.delay;
  for (size_t i = 0; i < 8; ++i) {
    raw.requests[i] = pfc.requests[i];
    raw.indications[i] = pfc.indications[i];
  }
  const Bytes bytes = pfcBytes(pfc);
  ASSERT_EQ(bytes.size(), sizeof(ieee_pfc));
  EXPECT_EQ(std::memcmp(bytes.data(), &raw, sizeof(raw)), 0);
}

TEST(DcbCodecEncode, GetRequestByteForByte) {
  auto bytes = encodeIeeeGetRequest("eth0", 0x01020304);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  Builder expected;
  expected.u32(32).u16(78).u16(NLM_F_REQUEST).u32(0x01020304).u32(0);  // nlmsghdr
  expected.u8(AF_UNSPEC).u8(21).u16(0);                                // dcbmsg: IEEE_GET
  expected.u16(9).u16(1).raw("eth0", 5).zeros(3);                      // DCB_ATTR_IFNAME
  EXPECT_EQ(*bytes, expected.finish());
}

TEST(DcbCodecEncode, SetRequestByteForByte) {
  const IeeePfc pfc = samplePfc();
  auto bytes = encodeIeeeSetPfcRequest("eth0", pfc, 9);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
  Builder expected;
  expected.u32(176).u16(79).u16(NLM_F_REQUEST).u32(9).u32(0);  // nlmsghdr
  expected.u8(AF_UNSPEC).u8(20).u16(0);                        // dcbmsg: IEEE_SET
  expected.u16(9).u16(1).raw("eth0", 5).zeros(3);              // DCB_ATTR_IFNAME
  expected.u16(144).u16(13 | 0x8000);                          // DCB_ATTR_IEEE, nested
  expected.u16(140).u16(2);                                    // DCB_ATTR_IEEE_PFC
  expected.u8(8).u8(0x08).u8(1).zeros(1).u16(0x1234).zeros(2);
  for (uint64_t v : pfc.requests) expected.u64(v);
  for (uint64_t v : pfc.indications) expected.u64(v);
  const Bytes want = expected.finish();
  ASSERT_EQ(bytes->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ((*bytes)[i], want[i]) << "byte " << i;
}

TEST(DcbCodecEncode, NameLengthsAndPadding) {
  // 15 bytes + NUL = 16: no padding; 4 bytes + NUL = 5: three bytes of padding.
  auto longest = encodeIeeeGetRequest("abcdefghijklmno", 1);
  ASSERT_TRUE(longest.isOk());
  EXPECT_EQ(longest->size(), 16u + 4u + 4u + 16u);
  EXPECT_EQ((*longest)[20], 20);  // nla_len
  EXPECT_EQ(longest->back(), 0);  // the NUL the kernel's NLA_NUL_STRING policy looks for

  for (const std::string bad : {"", "abcdefghijklmnop", "a/b", "with space", "x:y"}) {
    SCOPED_TRACE(bad);
    auto get = encodeIeeeGetRequest(bad, 1);
    ASSERT_FALSE(get.isOk());
    EXPECT_EQ(get.status().code(), StatusCode::kInvalidArgument);
    auto set = encodeIeeeSetPfcRequest(bad, IeeePfc{}, 1);
    ASSERT_FALSE(set.isOk());
    EXPECT_EQ(set.status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(encodeIeeeGetRequest(std::string("et\0h0", 5), 1).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(DcbCodecEncode, SetRequestRoundTripsThroughTheGetDecoderLayout) {
  // The PFC payload of a SET is exactly what a GET reply carries.
  const IeeePfc pfc = samplePfc();
  auto set = encodeIeeeSetPfcRequest("eth0", pfc, 3);
  ASSERT_TRUE(set.isOk());
  const Bytes payload(set->end() - 136, set->end());
  EXPECT_EQ(payload, pfcBytes(pfc));
}

TEST(DcbCodecDecode, GetReplyPicksLocalPfcNotPeer) {
  IeeePfc peer;
  peer.pfc_en = 0xff;
  peer.requests[0] = 77;
  const IeeePfc pfc = samplePfc();
  auto decoded = decodeIeeeGetReply(getReply(pfc, 5, peer));
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(*decoded, pfc);
}

TEST(DcbCodecDecode, GetReplyWithPeerBeforeLocalAndNestedFlag) {
  const IeeePfc pfc = samplePfc();
  IeeePfc peer;
  peer.pfc_en = 0x01;
  Builder b;
  b.header(RTM_GETDCB, NLM_F_REQUEST, 1).dcb(DCB_CMD_IEEE_GET).string(DCB_ATTR_IFNAME, "p1");
  b.open(DCB_ATTR_IEEE | NLA_F_NESTED)
      .attr(DCB_ATTR_IEEE_PEER_PFC, pfcBytes(peer))
      .attr(DCB_ATTR_IEEE_PFC, pfcBytes(pfc))
      .close();
  auto decoded = decodeIeeeGetReply(b.finish());
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(*decoded, pfc);
}

TEST(DcbCodecDecode, GetReplyLongerPfcPayloadIsReadUpToTheStruct) {
  const IeeePfc pfc = samplePfc();
  Bytes longer = pfcBytes(pfc);
  longer.resize(longer.size() + 8, 0xee);
  Builder b;
  b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET);
  b.open(DCB_ATTR_IEEE).attr(DCB_ATTR_IEEE_PFC, longer).close();
  auto decoded = decodeIeeeGetReply(b.finish());
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(*decoded, pfc);
}

TEST(DcbCodecDecode, GetReplyWithoutPfc) {
  {
    SCOPED_TRACE("IEEE nest without PFC (a driver without ieee_getpfc)");
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET).string(DCB_ATTR_IFNAME, "eth0");
    b.open(DCB_ATTR_IEEE).attr(DCB_ATTR_IEEE_ETS, Bytes(sizeof(ieee_ets), 0));
    b.attr(DCB_ATTR_IEEE_PEER_PFC, pfcBytes(samplePfc())).close();
    auto decoded = decodeIeeeGetReply(b.finish());
    ASSERT_FALSE(decoded.isOk());
    EXPECT_EQ(decoded.status().code(), StatusCode::kNotFound);
    EXPECT_NE(decoded.status().message().find("DCB_ATTR_IEEE_PFC"), std::string::npos);
  }
  {
    SCOPED_TRACE("no IEEE nest at all");
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET).string(DCB_ATTR_IFNAME, "eth0");
    auto decoded = decodeIeeeGetReply(b.finish());
    ASSERT_FALSE(decoded.isOk());
    EXPECT_EQ(decoded.status().code(), StatusCode::kNotFound);
  }
}

TEST(DcbCodecDecode, GetReplyMalformed) {
  const IeeePfc pfc = samplePfc();
  struct Case {
    const char* name;
    Bytes bytes;
  };
  std::vector<Case> cases;
  {
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET);
    Bytes shorter = pfcBytes(pfc);
    shorter.pop_back();
    b.open(DCB_ATTR_IEEE).attr(DCB_ATTR_IEEE_PFC, shorter).close();
    cases.push_back({"PFC payload one byte short", b.finish()});
  }
  {
    Builder b;
    b.header(RTM_SETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET);
    b.open(DCB_ATTR_IEEE).attr(DCB_ATTR_IEEE_PFC, pfcBytes(pfc)).close();
    cases.push_back({"RTM_SETDCB message", b.finish()});
  }
  {
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_CEE_GET);
    b.open(DCB_ATTR_IEEE).attr(DCB_ATTR_IEEE_PFC, pfcBytes(pfc)).close();
    cases.push_back({"CEE command", b.finish()});
  }
  {
    Builder b;
    b.header(NLMSG_ERROR, 0, 1).u32(static_cast<uint32_t>(-EOPNOTSUPP)).zeros(16);
    cases.push_back({"NLMSG_ERROR", b.finish()});
  }
  {
    Builder b;
    b.header(RTM_GETDCB, 0, 1);
    cases.push_back({"no dcbmsg", b.finish()});
  }
  {
    Bytes bytes = minimalGetReply(pfc, 1);
    setLength(bytes, static_cast<uint32_t>(bytes.size() + 4));
    cases.push_back({"nlmsg_len beyond the bytes", bytes});
  }
  {
    Bytes bytes = minimalGetReply(pfc, 1);
    setLength(bytes, 8);
    cases.push_back({"nlmsg_len shorter than the header", bytes});
  }
  {
    Bytes bytes = minimalGetReply(pfc, 1);
    const uint16_t huge = 0xfff0;
    std::memcpy(&bytes[20], &huge, 2);  // the IEEE nest claims more than the message holds
    cases.push_back({"nest overruns the message", bytes});
  }
  {
    Bytes bytes = minimalGetReply(pfc, 1);
    const uint16_t tiny = 2;
    std::memcpy(&bytes[24], &tiny, 2);  // PFC attribute shorter than an attribute header
    cases.push_back({"attribute shorter than its header", bytes});
  }
  {
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET).u16(0);  // two stray bytes
    cases.push_back({"partial attribute header", b.finish()});
  }
  cases.push_back({"empty", Bytes{}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto decoded = decodeIeeeGetReply(c.bytes);
    ASSERT_FALSE(decoded.isOk());
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << decoded.status().toString();
  }
}

TEST(DcbCodecDecode, EveryTruncationOfAGetReplyFails) {
  const Bytes full = minimalGetReply(samplePfc(), 1);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    SCOPED_TRACE(cut);
    Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    // As received (nlmsg_len says more than there is) and as if the sender had cut it.
    EXPECT_FALSE(decodeIeeeGetReply(prefix).isOk());
    setLength(prefix, static_cast<uint32_t>(cut));
    EXPECT_FALSE(decodeIeeeGetReply(prefix).isOk());
    // Copied into an exact-size heap block so that a read past the end is a real overrun.
    auto exact = std::make_unique<uint8_t[]>(cut + 1);
    if (cut > 0) std::memcpy(exact.get(), prefix.data(), cut);
    EXPECT_FALSE(decodeIeeeGetReply(std::span<const uint8_t>(exact.get(), cut)).isOk());
  }
}

TEST(DcbCodecDecode, MutatedAndRandomInputNeverCrashes) {
  std::mt19937 rng(20240611);
  const Bytes full = getReply(samplePfc(), 1, IeeePfc{});
  for (int round = 0; round < 5000; ++round) {
    Bytes mutated = full;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < flips; ++i) mutated[rng() % mutated.size()] = static_cast<uint8_t>(rng());
    (void)decodeIeeeGetReply(mutated);
    (void)decodeIeeeSetReply(mutated);
    (void)findDcbAnswer(mutated, 1);
  }
  for (int round = 0; round < 2000; ++round) {
    Bytes garbage(rng() % 600);
    for (uint8_t& byte : garbage) byte = static_cast<uint8_t>(rng());
    EXPECT_FALSE(decodeIeeeGetReply(garbage).isOk());
    EXPECT_FALSE(decodeIeeeSetReply(garbage).isOk());
    (void)findDcbAnswer(garbage, 1);
    // Past the header checks: a plausible header followed by random attributes.
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_GET).raw(garbage.data(), garbage.size());
    (void)decodeIeeeGetReply(b.finish());
  }
}

TEST(DcbCodecDecode, SetReplyStatus) {
  struct Case {
    const char* name;
    uint8_t status;
    int want;
  };
  const std::vector<Case> cases = {
      {"applied", 0, 0},
      {"-EINVAL", static_cast<uint8_t>(-EINVAL), EINVAL},
      {"-EOPNOTSUPP", static_cast<uint8_t>(-EOPNOTSUPP), EOPNOTSUPP},
      {"-ENOMEM", static_cast<uint8_t>(-ENOMEM), ENOMEM},
      // ENOTSUPP (524, kernel-internal) keeps only its low byte: it reads as ENOMEM (12).
      {"-524 truncated", static_cast<uint8_t>(-524), 12},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto decoded = decodeIeeeSetReply(setReply(c.status, 7));
    ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
    EXPECT_EQ(*decoded, c.want);
  }
}

TEST(DcbCodecDecode, SetReplyMalformedOrMissing) {
  {
    Builder b;
    b.header(RTM_SETDCB, 0, 1).dcb(DCB_CMD_IEEE_SET).string(DCB_ATTR_IFNAME, "eth0");
    auto decoded = decodeIeeeSetReply(b.finish());
    ASSERT_FALSE(decoded.isOk());
    EXPECT_EQ(decoded.status().code(), StatusCode::kNotFound);
  }
  {
    Builder b;
    b.header(RTM_SETDCB, 0, 1).dcb(DCB_CMD_IEEE_SET).attr(DCB_ATTR_IEEE, {});
    EXPECT_EQ(decodeIeeeSetReply(b.finish()).status().code(), StatusCode::kInvalidArgument);
  }
  {
    Builder b;
    b.header(RTM_GETDCB, 0, 1).dcb(DCB_CMD_IEEE_SET).attr(DCB_ATTR_IEEE, {0});
    EXPECT_EQ(decodeIeeeSetReply(b.finish()).status().code(), StatusCode::kInvalidArgument);
  }
  {
    Builder b;
    b.header(RTM_SETDCB, 0, 1).dcb(DCB_CMD_IEEE_DEL).attr(DCB_ATTR_IEEE, {0});
    EXPECT_EQ(decodeIeeeSetReply(b.finish()).status().code(), StatusCode::kInvalidArgument);
  }
  const Bytes full = setReply(0, 1);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    SCOPED_TRACE(cut);
    Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_FALSE(decodeIeeeSetReply(prefix).isOk());
  }
}

// An NLMSG_ERROR the way netlink_ack() writes it with NETLINK_CAP_ACK and NETLINK_EXT_ACK on.
Bytes cappedError(int error, uint32_t seq, const std::string& extack) {
  Builder b;
  const uint16_t flags = extack.empty() ? NLM_F_CAPPED : (NLM_F_CAPPED | NLM_F_ACK_TLVS);
  b.header(NLMSG_ERROR, flags, seq, 4242).u32(static_cast<uint32_t>(error));
  b.u32(28).u16(RTM_GETDCB).u16(NLM_F_REQUEST).u32(seq).u32(0);  // the request's header
  if (!extack.empty()) b.string(NLMSGERR_ATTR_MSG, extack);
  return b.finish();
}

TEST(DcbCodecAnswer, ErrorWithExtack) {
  auto answer = findDcbAnswer(cappedError(-EOPNOTSUPP, 11, "no DCB here"), 11);
  ASSERT_TRUE(answer.isOk()) << answer.status().toString();
  EXPECT_TRUE(answer->found);
  EXPECT_EQ(answer->error, EOPNOTSUPP);
  EXPECT_EQ(answer->extack, "no DCB here");
  EXPECT_TRUE(answer->reply.empty());
}

TEST(DcbCodecAnswer, UncappedErrorEchoesTheRequest) {
  auto request = encodeIeeeGetRequest("eth0", 12);
  ASSERT_TRUE(request.isOk());
  Builder b;
  b.header(NLMSG_ERROR, NLM_F_ACK_TLVS, 12).u32(static_cast<uint32_t>(-ENODEV));
  b.raw(request->data(), request->size()).string(NLMSGERR_ATTR_MSG, "gone");
  auto answer = findDcbAnswer(b.finish(), 12);
  ASSERT_TRUE(answer.isOk()) << answer.status().toString();
  EXPECT_EQ(answer->error, ENODEV);
  EXPECT_EQ(answer->extack, "gone");
}

TEST(DcbCodecAnswer, SkipsOtherSequenceNumbersAcksAndDone) {
  Builder b;
  const Bytes other = getReply(samplePfc(), 1, IeeePfc{});
  b.raw(other.data(), other.size());
  const size_t ack_start = b.size();
  b.header(NLMSG_ERROR, NLM_F_CAPPED, 2).u32(0).zeros(16);
  Bytes datagram = b.finish(ack_start);
  Builder done;
  done.header(NLMSG_DONE, 0, 2).u32(0);
  const Bytes done_bytes = done.finish();
  datagram.insert(datagram.end(), done_bytes.begin(), done_bytes.end());
  auto none = findDcbAnswer(datagram, 2);
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_FALSE(none->found);

  const Bytes ours = setReply(0, 2);
  datagram.insert(datagram.end(), ours.begin(), ours.end());
  auto found = findDcbAnswer(datagram, 2);
  ASSERT_TRUE(found.isOk()) << found.status().toString();
  ASSERT_TRUE(found->found);
  EXPECT_EQ(found->error, 0);
  EXPECT_EQ(found->reply, ours);

  auto empty = findDcbAnswer(Bytes{}, 2);
  ASSERT_TRUE(empty.isOk());
  EXPECT_FALSE(empty->found);
}

TEST(DcbCodecAnswer, MalformedDatagrams) {
  {
    Builder b;
    b.header(NLMSG_ERROR, 0, 3).u32(static_cast<uint32_t>(-EINVAL));  // no echoed header
    EXPECT_EQ(findDcbAnswer(b.finish(), 3).status().code(), StatusCode::kInvalidArgument);
  }
  for (int error : {1, INT_MIN, -5000}) {
    SCOPED_TRACE(error);
    EXPECT_EQ(findDcbAnswer(cappedError(error, 3, ""), 3).status().code(),
              StatusCode::kInvalidArgument);
  }
  {
    // Extack TLVs that overrun: the errno still comes through, the text is dropped.
    Bytes bytes = cappedError(-EPERM, 3, "text");
    const uint16_t huge = 0x7fff;
    std::memcpy(&bytes[36], &huge, 2);
    auto answer = findDcbAnswer(bytes, 3);
    ASSERT_TRUE(answer.isOk()) << answer.status().toString();
    EXPECT_EQ(answer->error, EPERM);
    EXPECT_EQ(answer->extack, "");
  }
  {
    // An uncapped error whose echoed length points past the message.
    Builder b;
    b.header(NLMSG_ERROR, NLM_F_ACK_TLVS, 3).u32(static_cast<uint32_t>(-EPERM));
    b.u32(0xffffff00u).u16(RTM_GETDCB).u16(NLM_F_REQUEST).u32(3).u32(0);
    auto answer = findDcbAnswer(b.finish(), 3);
    ASSERT_TRUE(answer.isOk()) << answer.status().toString();
    EXPECT_EQ(answer->error, EPERM);
    EXPECT_EQ(answer->extack, "");
  }
  const Bytes error = cappedError(-EOPNOTSUPP, 3, "no DCB here");
  for (size_t cut = 1; cut < error.size(); ++cut) {
    SCOPED_TRACE(cut);
    Bytes prefix(error.begin(), error.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_EQ(findDcbAnswer(prefix, 3).status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace fabric_chaos::sys
