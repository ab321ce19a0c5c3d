// RDMA netlink as bytes (injectors/sys/rdma_nl_codec.h): every request byte for byte against the
// uapi layout (<rdma/rdma_netlink.h>), replies built here the way drivers/infiniband/core/nldev.c
// writes them, and truncated, mutated and random input that must come back as an error without a
// read out of bounds. Also the GID text (injectors/sys/rdma_device_control.h), pure as well.
#include "injectors/sys/rdma_nl_codec.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "injectors/sys/rdma_device_control.h"

namespace fabric_chaos::sys {
namespace {

using core::StatusCode;
using Bytes = std::vector<uint8_t>;

// The numbers the expected bytes below are written with (uapi, stable ABI).
static_assert(RDMA_NL_NLDEV == 5);
static_assert(RDMA_NLDEV_CMD_GET == 1 && RDMA_NLDEV_CMD_NEWLINK == 3 &&
              RDMA_NLDEV_CMD_DELLINK == 4 && RDMA_NLDEV_CMD_PORT_GET == 5 &&
              RDMA_NLDEV_CMD_RES_GET == 9 && RDMA_NLDEV_CMD_GET_CHARDEV == 15);
static_assert(RDMA_NLDEV_ATTR_DEV_INDEX == 1 && RDMA_NLDEV_ATTR_DEV_NAME == 2 &&
              RDMA_NLDEV_ATTR_PORT_INDEX == 3 && RDMA_NLDEV_ATTR_PORT_STATE == 12 &&
              RDMA_NLDEV_ATTR_PORT_PHYS_STATE == 13 && RDMA_NLDEV_ATTR_RES_SUMMARY == 15 &&
              RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY == 16 &&
              RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME == 17 &&
              RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR == 18 && RDMA_NLDEV_ATTR_NDEV_INDEX == 50 &&
              RDMA_NLDEV_ATTR_NDEV_NAME == 51 && RDMA_NLDEV_ATTR_LINK_TYPE == 65 &&
              RDMA_NLDEV_ATTR_CHARDEV_TYPE == 69 && RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID == 73);
static_assert(RDMA_DRIVER_RXE == 14 && RDMA_DRIVER_SIW == 18 && RDMA_DRIVER_MLX5 == 1);
static_assert(NLM_F_REQUEST == 1 && NLM_F_ACK == 4 && NLM_F_DUMP == 0x300 && NLMSG_ERROR == 2 &&
              NLMSG_DONE == 3);

// Appends host-order integers and raw bytes; nests patch their length on close.
class Builder {
 public:
  Builder& u8(uint8_t v) { return raw(&v, 1); }
  Builder& u16(uint16_t v) { return raw(&v, 2); }
  Builder& u32(uint32_t v) { return raw(&v, 4); }
  Builder& u64(uint64_t v) { return raw(&v, 8); }
  Builder& raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_.insert(bytes_.end(), p, p + n);
    return *this;
  }
  Builder& pad() {
    bytes_.insert(bytes_.end(), (4 - bytes_.size() % 4) % 4, 0);
    return *this;
  }
  Builder& header(uint16_t type, uint16_t flags, uint32_t seq, uint32_t pid = 0) {
    start_ = bytes_.size();
    return u32(0).u16(type).u16(flags).u32(seq).u32(pid);  // length set by end()
  }
  Builder& attrU32(uint16_t type, uint32_t v) { return u16(8).u16(type).u32(v); }
  Builder& attrU8(uint16_t type, uint8_t v) { return u16(5).u16(type).u8(v).pad(); }
  Builder& attrU64(uint16_t type, uint64_t v) { return u16(12).u16(type).u64(v); }
  Builder& attrString(uint16_t type, const std::string& s) {
    u16(static_cast<uint16_t>(4 + s.size() + 1)).u16(type).raw(s.c_str(), s.size() + 1);
    return pad();
  }
  Builder& open(uint16_t type) {
    nests_.push_back(bytes_.size());
    return u16(0).u16(type);
  }
  Builder& close() {
    const size_t at = nests_.back();
    nests_.pop_back();
    const auto len = static_cast<uint16_t>(bytes_.size() - at);
    std::memcpy(bytes_.data() + at, &len, 2);
    return *this;
  }
  // An NLMSG_ERROR with `error` (0: an ack) echoing a header-only request of `echoed_type`.
  Builder& ack(uint32_t seq, int error, uint16_t echoed_type, uint16_t flags = NLM_F_CAPPED) {
    u32(16 + 4 + 16).u16(NLMSG_ERROR).u16(flags).u32(seq).u32(0);
    return u32(static_cast<uint32_t>(error)).u32(16).u16(echoed_type).u16(5).u32(seq).u32(0);
  }
  Builder& end() {
    const auto len = static_cast<uint32_t>(bytes_.size() - start_);
    std::memcpy(bytes_.data() + start_, &len, 4);
    return *this;
  }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes bytes_;
  size_t start_ = 0;
  std::vector<size_t> nests_;
};

constexpr uint16_t type(uint16_t command) { return RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, command); }

// --- requests ---

TEST(RdmaNlRequests, TheDeviceDumpIsAGetWithNlmFDumpAndNoAttributes) {
  EXPECT_EQ(encodeRdmaDeviceDumpRequest(7),
            Builder().header(5121, NLM_F_REQUEST | NLM_F_DUMP, 7).end().bytes());
}

TEST(RdmaNlRequests, PortUverbsResourceAndDelLinkNameTheDeviceByIndexAndAskForAnAck) {
  EXPECT_EQ(encodeRdmaPortRequest(3, 1, 9),
            Builder()
                .header(type(RDMA_NLDEV_CMD_PORT_GET), NLM_F_REQUEST | NLM_F_ACK, 9)
                .attrU32(1, 3)
                .attrU32(3, 1)
                .end()
                .bytes());
  // "uverbs\0" is 7 bytes: the attribute is 11 long and padded to 12.
  const Bytes uverbs = encodeRdmaUverbsRequest(3, 10);
  EXPECT_EQ(uverbs,
            Builder().header(5135, 5, 10).attrU32(1, 3).attrString(69, "uverbs").end().bytes());
  EXPECT_EQ(uverbs.size(), 16u + 8u + 12u);
  EXPECT_EQ(uverbs[24], 11);  // nla_len counts the NUL, not the padding
  EXPECT_EQ(encodeRdmaResourceSummaryRequest(2, 11),
            Builder().header(5129, 5, 11).attrU32(1, 2).end().bytes());
  EXPECT_EQ(encodeRdmaDelLinkRequest(4, 12),
            Builder().header(5124, 5, 12).attrU32(1, 4).end().bytes());
}

TEST(RdmaNlRequests, NewLinkCarriesTheNameTypeAndNetdevAsNulTerminatedStrings) {
  auto request = encodeRdmaNewLinkRequest("rxe0", "rxe", "eth0", 13);
  ASSERT_TRUE(request.isOk()) << request.status().toString();
  EXPECT_EQ(*request, Builder()
                          .header(5123, NLM_F_REQUEST | NLM_F_ACK, 13)
                          .attrString(2, "rxe0")
                          .attrString(65, "rxe")
                          .attrString(51, "eth0")
                          .end()
                          .bytes());
  // 48 bytes, type 0x1403 (client 5 << 10 | NEWLINK), NLM_F_REQUEST | NLM_F_ACK, seq 13, pid 0.
  const uint8_t header[] = {48, 0, 0, 0, 0x03, 0x14, 5, 0, 13, 0, 0, 0, 0, 0, 0, 0};
  // DEV_NAME: 9 bytes with its NUL, then 3 of padding.
  const uint8_t name[] = {9, 0, 2, 0, 'r', 'x', 'e', '0', 0, 0, 0, 0};
  ASSERT_EQ(request->size(), 48u);
  EXPECT_EQ(0, std::memcmp(request->data(), header, sizeof(header)));
  EXPECT_EQ(0, std::memcmp(request->data() + sizeof(header), name, sizeof(name)));
}

TEST(RdmaNlRequests, NewLinkRefusesNamesTheKernelWouldNot) {
  EXPECT_EQ(encodeRdmaNewLinkRequest("", "rxe", "eth0", 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(encodeRdmaNewLinkRequest("rxe%d", "rxe", "eth0", 1).status().message(),
            "invalid RDMA device name 'rxe%d'");
  EXPECT_FALSE(encodeRdmaNewLinkRequest(std::string(64, 'x'), "rxe", "eth0", 1).isOk());
  EXPECT_TRUE(encodeRdmaNewLinkRequest(std::string(63, 'x'), "rxe", "eth0", 1).isOk());
  EXPECT_EQ(encodeRdmaNewLinkRequest("rxe0", std::string(16, 't'), "eth0", 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(encodeRdmaNewLinkRequest("rxe0", "rxe", "eth/0", 1).status().message(),
            "invalid interface name 'eth/0'");
}

// --- replies ---

Bytes deviceDumpDatagram(uint32_t seq) {
  Builder b;
  b.header(type(1), NLM_F_MULTI, seq).attrU32(1, 0).attrString(2, "rxe0").attrU32(3, 1);
  b.attrU64(4, 0x1234).end();  // CAP_FLAGS: an attribute the decoder does not need
  b.header(type(1), NLM_F_MULTI, seq).attrU32(1, 2).attrString(2, "mlx5_0").attrU32(3, 2).end();
  b.header(NLMSG_DONE, NLM_F_MULTI, seq).u32(0).end();
  return b.bytes();
}

TEST(RdmaNlReplies, ADeviceDumpIsEveryEntryThenDone) {
  RdmaNlAnswer answer;
  ASSERT_TRUE(collectRdmaNlAnswer(deviceDumpDatagram(21), 21, answer).isOk());
  EXPECT_TRUE(answer.complete);
  EXPECT_EQ(answer.error, 0);
  ASSERT_EQ(answer.replies.size(), 2u);
  EXPECT_EQ(answer.replies[0].command, RDMA_NLDEV_CMD_GET);
  auto first = decodeRdmaDevice(answer.replies[0]);
  auto second = decodeRdmaDevice(answer.replies[1]);
  ASSERT_TRUE(first.isOk() && second.isOk());
  EXPECT_EQ(first->index, 0u);
  EXPECT_EQ(first->name, "rxe0");
  EXPECT_EQ(second->index, 2u);
  EXPECT_EQ(second->name, "mlx5_0");
}

TEST(RdmaNlReplies, AnswersAreGatheredAcrossDatagramsAndOtherSequenceNumbersSkipped) {
  const Bytes all = deviceDumpDatagram(21);
  RdmaNlAnswer answer;
  // Another request's stray message first, then the dump in two datagrams.
  Builder stray;
  stray.header(type(1), 0, 20).attrU32(1, 9).attrString(2, "old0").end();
  ASSERT_TRUE(collectRdmaNlAnswer(stray.bytes(), 21, answer).isOk());
  EXPECT_TRUE(answer.replies.empty());
  EXPECT_FALSE(answer.complete);
  const size_t first_message = all[0];  // the first message's length (< 256)
  ASSERT_TRUE(collectRdmaNlAnswer(std::span(all).first(first_message), 21, answer).isOk());
  EXPECT_FALSE(answer.complete);
  ASSERT_TRUE(collectRdmaNlAnswer(std::span(all).subspan(first_message), 21, answer).isOk());
  EXPECT_TRUE(answer.complete);
  EXPECT_EQ(answer.replies.size(), 2u);
}

TEST(RdmaNlReplies, APortReplyGivesStatesAndTheNetdev) {
  Builder b;
  // nldev_port_get_doit answers with the GET command's type.
  b.header(type(RDMA_NLDEV_CMD_GET), 0, 5)
      .attrU32(1, 0)
      .attrString(2, "rxe0")
      .attrU32(3, 1)
      .attrU64(4, 0)
      .attrU8(12, 4)
      .attrU8(13, 5)
      .attrU32(50, 2)
      .attrString(51, "eth0")
      .end();
  b.ack(5, 0, type(5));
  RdmaNlAnswer answer;
  ASSERT_TRUE(collectRdmaNlAnswer(b.bytes(), 5, answer).isOk());
  EXPECT_TRUE(answer.complete);
  ASSERT_EQ(answer.replies.size(), 1u);
  auto port = decodeRdmaPort(answer.replies[0]);
  ASSERT_TRUE(port.isOk()) << port.status().toString();
  EXPECT_EQ(port->device, "rxe0");
  EXPECT_EQ(port->port, 1u);
  EXPECT_EQ(ibPortStateName(port->state), "ACTIVE");
  EXPECT_EQ(ibPhysicalStateName(port->physical_state), "LINK_UP");
  EXPECT_EQ(port->netdev, "eth0");
  EXPECT_EQ(port->netdev_index, 2u);

  // A native InfiniBand port: no netdev attributes.
  Builder ib;
  ib.header(type(1), 0, 6).attrU32(1, 1).attrString(2, "mlx5_0").attrU32(3, 1);
  ib.attrU8(12, 1).attrU8(13, 3).end();
  RdmaNlAnswer ib_answer;
  ASSERT_TRUE(collectRdmaNlAnswer(ib.bytes(), 6, ib_answer).isOk());
  auto ib_port = decodeRdmaPort(ib_answer.replies.at(0));
  ASSERT_TRUE(ib_port.isOk());
  EXPECT_EQ(ib_port->netdev, "");
  EXPECT_EQ(ibPortStateName(ib_port->state), "DOWN");
  EXPECT_EQ(ibPhysicalStateName(ib_port->physical_state), "DISABLED");
}

TEST(RdmaNlReplies, TheUverbsReplyNamesTheDriverAsU32OrU64) {
  auto reply = [](bool with_id, size_t id_size) {
    Builder b;
    b.header(type(15), 0, 1).attrU64(72, 0xe700).attrU64(71, 1).attrString(70, "uverbs0");
    if (with_id && id_size == 4) b.attrU32(73, RDMA_DRIVER_RXE);
    if (with_id && id_size == 8) b.attrU64(73, RDMA_DRIVER_SIW);
    if (with_id && id_size == 2) b.u16(6).u16(73).u16(1).pad();
    b.end();
    RdmaNlAnswer answer;
    EXPECT_TRUE(collectRdmaNlAnswer(b.bytes(), 1, answer).isOk());
    return answer.replies.at(0);
  };
  auto rxe = decodeUverbsDriverId(reply(true, 4));
  ASSERT_TRUE(rxe.isOk());
  ASSERT_TRUE(rxe->has_value());
  EXPECT_EQ(rdmaLinkTypeOfDriver(**rxe), "rxe");
  auto siw = decodeUverbsDriverId(reply(true, 8));
  ASSERT_TRUE(siw.isOk() && siw->has_value());
  EXPECT_EQ(rdmaLinkTypeOfDriver(**siw), "siw");
  auto none = decodeUverbsDriverId(reply(false, 0));
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(decodeUverbsDriverId(reply(true, 2)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rdmaLinkTypeOfDriver(RDMA_DRIVER_MLX5), "");
  EXPECT_EQ(rdmaLinkTypeOfDriver(RDMA_DRIVER_UNKNOWN), "");
}

TEST(RdmaNlReplies, TheResourceSummaryCountsEachResourceByName) {
  Builder b;
  b.header(type(9), 0, 3).attrU32(1, 0).attrString(2, "rxe0").open(15);
  for (const auto& [name, count] :
       std::vector<std::pair<std::string, uint64_t>>{{"pd", 1}, {"cq", 1}, {"qp", 1}, {"ctx", 2}}) {
    b.open(16).attrString(17, name).attrU64(18, count).close();
  }
  b.close().end();
  RdmaNlAnswer answer;
  ASSERT_TRUE(collectRdmaNlAnswer(b.bytes(), 3, answer).isOk());
  auto summary = decodeRdmaResourceSummary(answer.replies.at(0));
  ASSERT_TRUE(summary.isOk()) << summary.status().toString();
  EXPECT_EQ(summary->at("ctx"), 2u);
  EXPECT_EQ(summary->at("qp"), 1u);
  EXPECT_EQ(summary->size(), 4u);

  Builder without;
  without.header(type(9), 0, 3).attrU32(1, 0).end();
  RdmaNlAnswer bare;
  ASSERT_TRUE(collectRdmaNlAnswer(without.bytes(), 3, bare).isOk());
  EXPECT_EQ(decodeRdmaResourceSummary(bare.replies.at(0)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(RdmaNlReplies, AnErrorEndsTheAnswerWithItsErrnoAndExtendedAck) {
  Bytes bytes = Builder().ack(8, -EINVAL, type(4), NLM_F_CAPPED | NLM_F_ACK_TLVS).bytes();
  Builder tlv;
  tlv.attrString(NLMSGERR_ATTR_MSG, "no such device");
  bytes.insert(bytes.end(), tlv.bytes().begin(), tlv.bytes().end());
  const auto len = static_cast<uint32_t>(bytes.size());
  std::memcpy(bytes.data(), &len, 4);
  RdmaNlAnswer answer;
  ASSERT_TRUE(collectRdmaNlAnswer(bytes, 8, answer).isOk());
  EXPECT_TRUE(answer.complete);
  EXPECT_EQ(answer.error, EINVAL);
  EXPECT_EQ(answer.extack, "no such device");
  EXPECT_TRUE(answer.replies.empty());
}

TEST(RdmaNlReplies, MalformedInputIsRefused) {
  RdmaNlAnswer answer;
  const Bytes short_header(10, 0);
  EXPECT_EQ(collectRdmaNlAnswer(short_header, 1, answer).code(), StatusCode::kInvalidArgument);
  Bytes lying = deviceDumpDatagram(1);
  lying[0] = 200;  // the first message claims more than the datagram holds... or overlaps
  lying[1] = 1;
  EXPECT_EQ(collectRdmaNlAnswer(lying, 1, answer).code(), StatusCode::kInvalidArgument);
  Builder overrun;
  overrun.header(type(1), 0, 1).u16(40).u16(2).u32(0).end();  // attribute longer than message
  EXPECT_EQ(collectRdmaNlAnswer(overrun.bytes(), 1, answer).code(), StatusCode::kInvalidArgument);
  Builder cut;
  cut.header(NLMSG_ERROR, 0, 1).u16(0).end();  // no room for struct nlmsgerr
  EXPECT_EQ(collectRdmaNlAnswer(cut.bytes(), 1, answer).code(), StatusCode::kInvalidArgument);
  RdmaNlReply no_name;
  no_name.attributes[RDMA_NLDEV_ATTR_DEV_INDEX] = {1, 0, 0, 0};
  EXPECT_EQ(decodeRdmaDevice(no_name).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(decodeRdmaPort(no_name).status().code(), StatusCode::kInvalidArgument);
}

TEST(RdmaNlReplies, RandomAndMutatedBytesNeverReadOutOfBounds) {
  std::mt19937 random(1234);
  const Bytes valid = deviceDumpDatagram(4);
  for (int round = 0; round < 5000; ++round) {
    Bytes bytes = valid;
    if (round % 2 == 0) {
      bytes.resize(random() % (valid.size() + 1));
    } else {
      for (int i = 0; i < 4; ++i) bytes[random() % bytes.size()] = static_cast<uint8_t>(random());
    }
    RdmaNlAnswer answer;
    if (collectRdmaNlAnswer(bytes, 4, answer).isOk()) {
      for (const RdmaNlReply& reply : answer.replies) {
        (void)decodeRdmaDevice(reply);
        (void)decodeRdmaPort(reply);
        (void)decodeUverbsDriverId(reply);
        (void)decodeRdmaResourceSummary(reply);
      }
    }
  }
}

TEST(RdmaNlReplies, PortStatesAreNamedAsTheRdmaToolNamesThem) {
  EXPECT_EQ(ibPortStateName(0), "NOP");
  EXPECT_EQ(ibPortStateName(2), "INIT");
  EXPECT_EQ(ibPortStateName(3), "ARMED");
  EXPECT_EQ(ibPortStateName(5), "ACTIVE_DEFER");
  EXPECT_EQ(ibPortStateName(9), "UNKNOWN");
  EXPECT_EQ(ibPhysicalStateName(2), "POLLING");
  EXPECT_EQ(ibPhysicalStateName(0), "UNKNOWN");
}

// --- GIDs ---

TEST(RdmaGids, AnIpv4MappedGidIsItsIpv4AddressAndAnyOtherAnIpv6One) {
  auto v4 = gidAddressOf("0000:0000:0000:0000:0000:ffff:0a00:020f\n");
  ASSERT_TRUE(v4.isOk()) << v4.status().toString();
  EXPECT_EQ(*v4, (RdmaGidAddress{AF_INET, "10.0.2.15"}));
  auto v6 = gidAddressOf("fec0:0000:0000:0000:5054:00ff:fefc:ff01");
  ASSERT_TRUE(v6.isOk());
  EXPECT_EQ(*v6, (RdmaGidAddress{AF_INET6, "fec0::5054:ff:fefc:ff01"}));
  EXPECT_EQ(gidAddressOf("0000:0000:0000:0000:0000:0000:0000:0000").status().code(),
            StatusCode::kNotFound);
  // ::ffff:0:0/96 needs ten zero bytes first; this is an ordinary IPv6 address.
  auto not_mapped = gidAddressOf("0001:0000:0000:0000:0000:ffff:0a00:020f");
  ASSERT_TRUE(not_mapped.isOk());
  EXPECT_EQ(not_mapped->family, AF_INET6);
  for (const char* bad : {"", "fe80::1", "fe80:0000:0000:0000:5054:00ff:fefc:ff0g",
                          "fe80-0000:0000:0000:5054:00ff:fefc:ff01"}) {
    EXPECT_EQ(gidAddressOf(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(RdmaGids, TheDefaultGidIsTheMacsEui64UnderFe80) {
  auto gid = defaultRoceGidOf("52:54:00:fc:ff:01");
  ASSERT_TRUE(gid.isOk());
  EXPECT_EQ(*gid, (RdmaGidAddress{AF_INET6, "fe80::5054:ff:fefc:ff01"}));
  auto universal = defaultRoceGidOf("00:11:22:33:44:55");
  ASSERT_TRUE(universal.isOk());
  EXPECT_EQ(universal->address, "fe80::211:22ff:fe33:4455");
  EXPECT_FALSE(defaultRoceGidOf("").isOk());
  EXPECT_FALSE(defaultRoceGidOf("52:54:00:fc:ff").isOk());
  EXPECT_FALSE(defaultRoceGidOf("52:54:00:fc:ff:01:02").isOk());
}

// The sysfs half of the real adapter, against a directory shaped like /sys.
TEST(RdmaGids, TheAdapterReadsTheGidTableFromSysfs) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("fc-rdma-sysfs-" + std::to_string(::getpid()));
  const fs::path gids = root / "class" / "infiniband" / "rxe0" / "ports" / "1" / "gids";
  fs::create_directories(gids);
  std::ofstream(gids / "0") << "fe80:0000:0000:0000:5054:00ff:fefc:ff01\n";
  std::ofstream(gids / "1") << "0000:0000:0000:0000:0000:ffff:0a00:020f\n";
  std::ofstream(gids / "2") << "0000:0000:0000:0000:0000:0000:0000:0000\n";
  auto devices = makeNetlinkRdmaDeviceControl(root.string());
  auto gid = devices->gidAddress("rxe0", 1, 1);
  ASSERT_TRUE(gid.isOk()) << gid.status().toString();
  EXPECT_EQ(gid->address, "10.0.2.15");
  auto empty = devices->gidAddress("rxe0", 1, 2);
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(empty.status().message(), "rxe0 port 1 GID 2: the GID entry is empty");
  EXPECT_EQ(devices->gidAddress("rxe0", 1, 3).status().message(), "rxe0 port 1 has no GID index 3");
  EXPECT_EQ(devices->gidAddress("rxe0", 2, 0).status().message(), "rxe0 has no port 2");
  EXPECT_EQ(devices->gidAddress("rxe9", 1, 0).status().message(), "no RDMA device rxe9");
  EXPECT_EQ(devices->gidAddress("../rxe0", 1, 0).status().code(), StatusCode::kNotFound);
  fs::remove_all(root);
}

}  // namespace
}  // namespace fabric_chaos::sys
