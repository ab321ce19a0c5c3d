// PFC frames on a real veth between two throw-away namespaces (fcpfc-<pid>-<n>-a/-b), seen by an
// independent observer: tshark in the peer namespace, never the code under test. Covers the
// AF_PACKET adapter (injectors/sys/raw_packets.h), the link speed (injectors/sys/ethtool.h) and
// the `fabric-chaos pfc-emit` process end to end (rate, stats lines, the closing XON, exit codes,
// parent death). Needs root and tshark; outside CI it skips without them, in CI it fails and says
// what is missing.

#include "injectors/sys/raw_packets.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "injectors/pfc/pfc_frame.h"
#include "injectors/sys/ethtool.h"
#include "injectors/sys/netns.h"
#include "tests/privileged/support.h"

namespace fabric_chaos {
namespace {

using core::StatusCode;
using injectors::MacAddress;
using testing::ChildProcess;
using testing::runShell;
using testing::timingScale;

constexpr int kFrames = 200;
constexpr uint16_t kProbeEthertype = 0x88B5;  // IEEE local experimental: tshark's readiness probe

bool inCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

int scaledMs(int ms) { return static_cast<int>(ms * timingScale()); }

std::string macText(const MacAddress& mac) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

std::vector<std::string> splitTabs(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, '\t')) fields.push_back(field);
  if (!line.empty() && line.back() == '\t') fields.push_back("");
  return fields;
}

// One frame as tshark decoded it.
struct SeenFrame {
  double t = 0;  // frame.time_epoch
  std::string src;
  std::string dst;
  std::string type;                // "0x8808"
  std::string opcode;              // "0x0101"
  std::string enbv;                // "0x0008"
  std::vector<std::string> pause;  // macc.cbfc.pause_time.c0..c7, decimal

  bool isPfc() const { return type == "0x8808" && dst == "01:80:c2:00:00:01"; }
};

// tshark in `netns` on `ifname`, capturing MAC Control frames and the readiness probe, one line
// of fields per frame. Stopped with SIGINT (it flushes), or killed when destroyed.
class TsharkCapture {
 public:
  TsharkCapture(const std::string& netns, const std::string& ifname)
      : child_({"/bin/sh", "-c",
                "exec ip netns exec " + netns + " tshark -i " + ifname +
                    " -l -n -f 'ether proto 0x8808 or ether proto 0x88b5' -T fields"
                    " -E separator=/t -e frame.time_epoch -e eth.src -e eth.dst -e eth.type"
                    " -e macc.opcode -e macc.cbfc.enbv -e macc.cbfc.pause_time.c0"
                    " -e macc.cbfc.pause_time.c1 -e macc.cbfc.pause_time.c2"
                    " -e macc.cbfc.pause_time.c3 -e macc.cbfc.pause_time.c4"
                    " -e macc.cbfc.pause_time.c5 -e macc.cbfc.pause_time.c6"
                    " -e macc.cbfc.pause_time.c7"}) {}

  // Sends probe frames with `probe` until tshark shows one: from then on nothing is missed.
  bool waitUntilCapturing(const std::function<void()>& probe) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(scaledMs(20000));
    while (std::chrono::steady_clock::now() < deadline) {
      if (!child_.running()) return false;
      probe();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (const SeenFrame& f : frames()) {
        if (f.type == "0x88b5") return true;
      }
    }
    return false;
  }

  std::vector<SeenFrame> frames() {
    std::vector<SeenFrame> out;
    std::stringstream in(child_.output());
    std::string line;
    while (std::getline(in, line)) {
      auto f = splitTabs(line);
      if (f.size() < 14) continue;  // tshark's own messages
      SeenFrame frame;
      frame.t = std::atof(f[0].c_str());
      frame.src = f[1];
      frame.dst = f[2];
      frame.type = f[3];
      frame.opcode = f[4];
      frame.enbv = f[5];
      frame.pause.assign(f.begin() + 6, f.begin() + 14);
      out.push_back(frame);
    }
    return out;
  }

  std::vector<SeenFrame> pfcFrames() {
    std::vector<SeenFrame> all = frames();
    std::vector<SeenFrame> pfc;
    std::copy_if(all.begin(), all.end(), std::back_inserter(pfc),
                 [](const SeenFrame& f) { return f.isPfc(); });
    return pfc;
  }

  // SIGINT: tshark prints what it still has and exits.
  void stop() { child_.signalAndWait(SIGINT, scaledMs(10000), true); }
  std::string output() { return child_.output(); }

 private:
  ChildProcess child_;
};

std::atomic<int> g_test_counter{0};  // constant-initialized

class RawPacketsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = testing::missingPrivilegedPrerequisite();
    if (missing.empty() && runShell("command -v tshark >/dev/null 2>&1").exit_code != 0) {
      missing = "the 'tshark' tool (Debian package tshark), the independent observer of frames";
    }
    if (!missing.empty()) {
      if (inCi()) {
        FAIL() << "privileged tier: missing " << missing;
      } else {
        GTEST_SKIP() << "privileged tier skipped outside CI: missing " << missing;
      }
    }
    binary_ = std::getenv("FC_BINARY");
    const std::string prefix =
        "fcpfc-" + std::to_string(::getpid()) + "-" + std::to_string(g_test_counter++);
    ns_a_ = prefix + "-a";
    ns_b_ = prefix + "-b";
    for (const std::string& ns : {ns_a_, ns_b_}) {
      ASSERT_EQ(runShell("ip netns add " + ns + " 2>&1").exit_code, 0) << ns;
      created_.push_back(ns);
    }
    ASSERT_EQ(
        runShell("ip -n " + ns_a_ + " link add va type veth peer name vb netns " + ns_b_ + " 2>&1")
            .exit_code,
        0);
    ASSERT_EQ(runShell("ip -n " + ns_a_ + " link set va up").exit_code, 0);
    ASSERT_EQ(runShell("ip -n " + ns_b_ + " link set vb up").exit_code, 0);
  }

  void TearDown() override {
    for (const std::string& ns : created_) runShell("ip netns del " + ns + " 2>/dev/null");
    created_.clear();
  }

  // openRawPacketSocket in ns a.
  core::Result<std::unique_ptr<sys::RawPacketSocket>> openInA(const std::string& ifname,
                                                              bool bypass_qdisc = false) {
    core::Result<std::unique_ptr<sys::RawPacketSocket>> result =
        core::Status(core::StatusCode::kInternal, "not run");
    core::Status ran = sys::runInNetns(ns_a_, [&] {
      result = sys::openRawPacketSocket(ifname, 0, bypass_qdisc);
      return core::Status::ok();
    });
    if (!ran.isOk()) return ran;
    return result;
  }

  std::optional<int64_t> speedInA(const std::string& ifname) {
    std::optional<int64_t> speed;
    EXPECT_TRUE(sys::runInNetns(ns_a_, [&] {
                  speed = sys::linkSpeedMbps(ifname);
                  return core::Status::ok();
                }).isOk());
    return speed;
  }

  // The probe frame for TsharkCapture::waitUntilCapturing, sent on va.
  static void sendProbe(sys::RawPacketSocket& socket) {
    std::array<uint8_t, 60> probe{};
    std::fill(probe.begin(), probe.begin() + 6, 0xff);
    const auto mac = socket.mac();
    std::copy(mac.begin(), mac.end(), probe.begin() + 6);
    probe[12] = kProbeEthertype >> 8;
    probe[13] = kProbeEthertype & 0xff;
    EXPECT_TRUE(socket.send(probe.data(), probe.size()).isOk());
  }

  // `ip netns exec A fabric-chaos pfc-emit ARGS 2>&1`, exit code and output.
  testing::CommandOutput emitInA(const std::string& args) {
    return runShell("ip netns exec " + ns_a_ + " " + binary_ + " pfc-emit " + args + " 2>&1");
  }

  std::string binary_;
  std::string ns_a_;
  std::string ns_b_;
  std::vector<std::string> created_;
};

// The JSON lines of an emitter's output (stderr lines and anything else skipped).
std::vector<nlohmann::json> statsLines(const std::string& output) {
  std::vector<nlohmann::json> lines;
  std::stringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

TEST_F(RawPacketsTest, TwoHundredPfcFramesArriveAtThePeerByteForByte) {
  auto socket = openInA("va");
  ASSERT_TRUE(socket.isOk()) << socket.status().toString();
  sys::RawPacketSocket& out = **socket;

  // The adapter's view of va agrees with iproute2's.
  const auto link = runShell("ip -n " + ns_a_ + " -o link show dev va");
  EXPECT_NE(link.out.find("link/ether " + macText(out.mac())), std::string::npos) << link.out;
  EXPECT_EQ(link.out.rfind(std::to_string(out.ifindex()) + ": va@", 0), 0u) << link.out;

  TsharkCapture tshark(ns_b_, "vb");
  ASSERT_TRUE(tshark.waitUntilCapturing([&] { sendProbe(out); })) << tshark.output();

  const auto frame = injectors::buildPfcFrame(out.mac(), injectors::pfcPause(0b00101000, 0x1234));
  for (int i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(out.send(frame.data(), frame.size()).isOk()) << i;
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  testing::waitFor([&] { return tshark.pfcFrames().size() >= kFrames; }, scaledMs(10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // nothing more should come
  tshark.stop();

  const std::vector<SeenFrame> seen = tshark.pfcFrames();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kFrames)) << tshark.output().substr(0, 2000);
  for (const SeenFrame& f : seen) {
    EXPECT_EQ(f.src, macText(out.mac()));
    EXPECT_EQ(f.opcode, "0x0101");
    EXPECT_EQ(f.enbv, "0x0028");
    const std::vector<std::string> expected = {"0", "0", "0", "4660", "0", "4660", "0", "0"};
    EXPECT_EQ(f.pause, expected);
    if (HasFailure()) break;
  }
  std::printf("tshark in %s saw %zu of %d PFC frames (dst 01:80:c2:00:00:01, opcode 0x0101)\n",
              ns_b_.c_str(), seen.size(), kFrames);
}

// The receiver in ns b gets the frame with the kernel's time of arrival, not the time it was
// read: the PFC agent counts a pause from it. Read 100 ms after the send, the frame still says
// when it came (veth delivers in the sender's call; the margin is for a loaded machine).
TEST_F(RawPacketsTest, AReceivedFrameCarriesItsArrivalTimeOnTheMonotonicClock) {
  auto socket = openInA("va");
  ASSERT_TRUE(socket.isOk()) << socket.status().toString();
  core::Result<std::unique_ptr<sys::RawPacketReceiver>> receiver =
      core::Status(core::StatusCode::kInternal, "not run");
  ASSERT_TRUE(sys::runInNetns(ns_b_, [&] {
                receiver = sys::openRawPacketReceiver("vb", injectors::kMacControlEthertype);
                return core::Status::ok();
              }).isOk());
  ASSERT_TRUE(receiver.isOk()) << receiver.status().toString();

  const auto frame = injectors::buildPfcFrame((*socket)->mac(), injectors::pfcPause(0b1000, 7));
  const int64_t before_send = testing::steadyNowNs();
  ASSERT_TRUE((*socket)->send(frame.data(), frame.size()).isOk());
  const int64_t after_send = testing::steadyNowNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  uint8_t buffer[2048];
  std::optional<sys::ReceivedFrame> got;
  ASSERT_TRUE(testing::waitFor(
      [&] {
        auto next = (*receiver)->receive(buffer, sizeof(buffer));
        EXPECT_TRUE(next.isOk()) << next.status().toString();
        if (next.isOk() && next->has_value()) got = **next;
        return got.has_value() || !next.isOk();
      },
      scaledMs(5000)));
  ASSERT_TRUE(got.has_value());
  const int64_t read_at = testing::steadyNowNs();
  EXPECT_EQ(got->length, frame.size());
  EXPECT_FALSE(got->outgoing);
  EXPECT_GE(got->arrival_ns, before_send);
  EXPECT_LE(got->arrival_ns, after_send + 50'000'000)
      << "read " << (read_at - got->arrival_ns) << " ns after its stamp";
  auto pause = injectors::parsePfcFrame(buffer, got->length);
  ASSERT_TRUE(pause.has_value());
  EXPECT_EQ(pause->quanta[3], 7);
}

// `tc -s qdisc show dev va` in ns a: the root qdisc's "Sent N bytes M pkt".
int64_t rootQdiscPackets(const std::string& ns) {
  const std::string out = runShell("tc -s -n " + ns + " qdisc show dev va").out;
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(Sent \d+ bytes (\d+) pkt)"))) return -1;
  return std::stoll(m[1]);
}

// A switch's PFC frames must not wait behind its congested queues: with PACKET_QDISC_BYPASS they
// reach the peer and the port's qdisc never counts them; without it, it does. (The qdisc also
// counts what the namespace sends by itself, IPv6 neighbour discovery: hence a margin of a few.)
TEST_F(RawPacketsTest, BypassingTheQdiscSendsPastThePortsQueues) {
  ASSERT_EQ(runShell("tc -n " + ns_a_ + " qdisc replace dev va root bfifo limit 100000").exit_code,
            0);
  auto bypassing = openInA("va", true);
  ASSERT_TRUE(bypassing.isOk()) << bypassing.status().toString();
  auto queued = openInA("va");
  ASSERT_TRUE(queued.isOk()) << queued.status().toString();
  TsharkCapture tshark(ns_b_, "vb");
  ASSERT_TRUE(tshark.waitUntilCapturing([&] { sendProbe(**queued); })) << tshark.output();
  const int64_t before = rootQdiscPackets(ns_a_);
  const auto frame = injectors::buildPfcFrame((*bypassing)->mac(), injectors::pfcPause(0x08, 7));
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*bypassing)->send(frame.data(), frame.size()).isOk()) << i;
    if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  testing::waitFor([&] { return tshark.pfcFrames().size() >= 200; }, scaledMs(10000));
  const int64_t after_bypass = rootQdiscPackets(ns_a_);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*queued)->send(frame.data(), frame.size()).isOk());
  testing::waitFor([&] { return tshark.pfcFrames().size() >= 220; }, scaledMs(10000));
  const int64_t after_queued = rootQdiscPackets(ns_a_);
  tshark.stop();
  std::printf(
      "bfifo on va counted %lld packets before, %lld after 200 bypassing frames, %lld after "
      "20 queued ones; tshark on vb saw %zu PFC frames\n",
      static_cast<long long>(before), static_cast<long long>(after_bypass),
      static_cast<long long>(after_queued), tshark.pfcFrames().size());
  ASSERT_GE(before, 0);
  EXPECT_EQ(tshark.pfcFrames().size(), 220u);
  EXPECT_LT(after_bypass - before, 5) << "bypassing frames went through the qdisc";
  EXPECT_GE(after_queued - after_bypass, 20);
  EXPECT_LT(after_queued - after_bypass, 25);
}

TEST_F(RawPacketsTest, AnUnknownInterfaceIsNotFound) {
  auto socket = openInA("fcnosuch0");
  ASSERT_FALSE(socket.isOk());
  EXPECT_EQ(socket.status().code(), StatusCode::kNotFound) << socket.status().toString();
  EXPECT_NE(socket.status().message().find("fcnosuch0"), std::string::npos);
  EXPECT_FALSE(speedInA("fcnosuch0").has_value());

  auto bad = openInA("a/b");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RawPacketsTest, SendingAfterTheInterfaceWentAwayFails) {
  auto socket = openInA("va");
  ASSERT_TRUE(socket.isOk()) << socket.status().toString();
  const auto frame = injectors::buildPfcFrame((*socket)->mac(), injectors::pfcPause(0x08, 1));
  ASSERT_TRUE((*socket)->send(frame.data(), frame.size()).isOk());
  ASSERT_EQ(runShell("ip -n " + ns_a_ + " link del va").exit_code, 0);
  core::Status status = (*socket)->send(frame.data(), frame.size());
  EXPECT_FALSE(status.isOk());
  std::printf("send after `ip link del va`: %s\n", status.toString().c_str());
}

TEST_F(RawPacketsTest, LinkSpeedAgreesWithEthtool) {
  // va (veth: 10000 on recent kernels), lo (no ethtool link settings at all) and, where the
  // kernel has bridges, a bridge without ports (SPEED_UNKNOWN).
  std::vector<std::string> ifnames = {"va", "lo"};
  if (runShell("ip -n " + ns_a_ + " link add fcbr0 type bridge 2>/dev/null").exit_code == 0) {
    ifnames.push_back("fcbr0");
  }
  const bool have_ethtool = runShell("command -v ethtool >/dev/null 2>&1").exit_code == 0;
  for (const std::string& ifname : ifnames) {
    const std::optional<int64_t> speed = speedInA(ifname);
    std::printf("linkSpeedMbps(%s) = %s\n", ifname.c_str(),
                speed ? std::to_string(*speed).c_str() : "nullopt");
    if (speed) {
      EXPECT_GT(*speed, 0) << ifname;
    }
    if (!have_ethtool) continue;
    // ethtool prints "Speed: 10000Mb/s", or "Speed: Unknown!", or no Speed line at all.
    const auto report =
        runShell("ip netns exec " + ns_a_ + " ethtool " + ifname + " 2>/dev/null | grep Speed:");
    const auto mbs = report.out.find("Mb/s");
    if (mbs == std::string::npos) {
      EXPECT_FALSE(speed.has_value()) << ifname << ": ethtool says " << report.out;
    } else {
      const auto colon = report.out.find(':');
      EXPECT_EQ(speed, std::atoll(report.out.substr(colon + 1, mbs - colon - 1).c_str()))
          << ifname << ": ethtool says " << report.out;
    }
  }
}

// --- the emitter process ---------------------------------------------------------------------

TEST_F(RawPacketsTest, EmitterSendsAThousandFramesASecondAndEndsWithXon) {
  auto probe_socket = openInA("va");
  ASSERT_TRUE(probe_socket.isOk()) << probe_socket.status().toString();
  TsharkCapture tshark(ns_b_, "vb");
  ASSERT_TRUE(tshark.waitUntilCapturing([&] { sendProbe(**probe_socket); })) << tshark.output();

  ChildProcess emitter({"/bin/sh", "-c",
                        "exec ip netns exec " + ns_a_ + " " + binary_ +
                            " pfc-emit --ifname va --priorities 3 --interval-us 1000"
                            " --stats-ms 100 --xon-on-stop"});
  // The first stats line comes right after the first frame.
  ASSERT_TRUE(
      testing::waitFor([&] { return !statsLines(emitter.output()).empty(); }, scaledMs(10000)))
      << emitter.output();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ASSERT_EQ(emitter.signalAndWait(SIGTERM, scaledMs(5000), true), 0) << emitter.output();
  // Until tshark has shown the XON (pause time 0), or for at most 5 s.
  testing::waitFor(
      [&] {
        auto pfc = tshark.pfcFrames();
        return !pfc.empty() && pfc.back().pause[3] == "0";
      },
      scaledMs(5000));
  tshark.stop();

  const std::vector<nlohmann::json> stats = statsLines(emitter.output());
  ASSERT_FALSE(stats.empty()) << emitter.output();
  const nlohmann::json& last = stats.back();
  EXPECT_EQ(last.value("final", false), true) << last.dump();
  const int64_t frames = last.value("frames", int64_t{0});
  EXPECT_GT(frames, 0) << last.dump();
  EXPECT_EQ(last.value("send_errors", -1), 0) << last.dump();
  EXPECT_EQ(last.value("period_us", 0.0), 1000.0) << last.dump();
  for (size_t i = 0; i + 1 < stats.size(); ++i) EXPECT_FALSE(stats[i].contains("final"));

  const std::vector<SeenFrame> seen = tshark.pfcFrames();
  ASSERT_GE(seen.size(), 3u) << tshark.output().substr(0, 2000);
  // Every frame the emitter counted arrived, and nothing else.
  EXPECT_EQ(static_cast<int64_t>(seen.size()), frames);
  // The last one is the XON: priority 3 enabled, pause time 0.
  EXPECT_EQ(seen.back().enbv, "0x0008");
  EXPECT_EQ(seen.back().pause[3], "0") << "the last frame seen is not an XON";
  // The ones before pause priority 3 for 65535 quanta.
  std::vector<double> times;
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_EQ(seen[i].pause[3], "65535") << i;
    EXPECT_EQ(seen[i].enbv, "0x0008") << i;
    times.push_back(seen[i].t);
  }
  const double span = times.back() - times.front();
  ASSERT_GT(span, 0.5) << "the storm lasted " << span << " s";
  const double rate = static_cast<double>(times.size() - 1) / span;
  // Frames seen by tshark in the first second of the storm.
  const auto in_first_second =
      std::count_if(times.begin(), times.end(), [&](double t) { return t < times.front() + 1.0; });
  std::printf(
      "tshark: %zu pause frames over %.3f s = %.1f frames/s (%ld in the first second), then XON;"
      " emitter: %s\n",
      times.size(), span, rate, static_cast<long>(in_first_second), last.dump().c_str());
  EXPECT_GE(rate, 300.0 / timingScale());
  EXPECT_LE(rate, 1200.0);
  EXPECT_GE(static_cast<double>(in_first_second), 300.0 / timingScale());
  EXPECT_LE(in_first_second, 1200);
}

TEST_F(RawPacketsTest, EmitterContinuousModeUsesTheReportedLinkSpeed) {
  // A veth reports 10000 Mb/s: half of 3355.392 us is 1677.696 us.
  const std::optional<int64_t> speed = speedInA("va");
  if (!speed.has_value()) GTEST_SKIP() << "this kernel's veth reports no link speed";
  ChildProcess emitter({"/bin/sh", "-c",
                        "exec ip netns exec " + ns_a_ + " " + binary_ +
                            " pfc-emit --ifname va --priorities 3,4 --continuous --stats-ms 50"});
  ASSERT_TRUE(
      testing::waitFor([&] { return !statsLines(emitter.output()).empty(); }, scaledMs(10000)))
      << emitter.output();
  ASSERT_EQ(emitter.signalAndWait(SIGINT, scaledMs(5000), true), 0) << emitter.output();
  const auto stats = statsLines(emitter.output());
  ASSERT_FALSE(stats.empty());
  const double expected_us = 65535.0 * 256.0 / static_cast<double>(*speed);
  EXPECT_NEAR(stats.back().value("period_us", 0.0), expected_us, 0.001) << emitter.output();
  EXPECT_NE(emitter.output().find("ethtool"), std::string::npos) << emitter.output();
}

TEST_F(RawPacketsTest, EmitterExitCodes) {
  // Bad usage: 2, with the reason.
  auto usage = emitInA("--ifname va --interval-us 1000");
  EXPECT_EQ(usage.exit_code, 2) << usage.out;
  EXPECT_NE(usage.out.find("--priorities"), std::string::npos) << usage.out;
  // --continuous where the driver reports no speed (lo has no ethtool link settings) and none
  // is given: 2, asking for --link-mbps.
  ASSERT_FALSE(speedInA("lo").has_value());
  auto no_speed = emitInA("--ifname lo --priorities 3 --continuous");
  EXPECT_EQ(no_speed.exit_code, 2) << no_speed.out;
  EXPECT_NE(no_speed.out.find("--link-mbps"), std::string::npos) << no_speed.out;
  // No such interface: 1, naming it.
  auto missing = emitInA("--ifname fcnosuch0 --priorities 3 --interval-us 1000");
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("fcnosuch0"), std::string::npos) << missing.out;
  // Without CAP_NET_RAW (dropped from the bounding set, so root's exec does not get it back): 1,
  // saying what is missing.
  if (runShell("command -v setpriv >/dev/null 2>&1").exit_code == 0) {
    auto no_cap =
        runShell("ip netns exec " + ns_a_ + " setpriv --bounding-set=-net_raw " + binary_ +
                 " pfc-emit --ifname va --priorities 3 --interval-us 1000 2>&1");
    EXPECT_EQ(no_cap.exit_code, 1) << no_cap.out;
    EXPECT_NE(no_cap.out.find("PERMISSION_DENIED"), std::string::npos) << no_cap.out;
    EXPECT_NE(no_cap.out.find("CAP_NET_RAW"), std::string::npos) << no_cap.out;
  }
  // --help: 0.
  EXPECT_EQ(emitInA("--help").exit_code, 0);
}

TEST_F(RawPacketsTest, EmitterStopsWhenItsParentGoesAway) {
  // A shell starts the emitter in the background, waits for its first stats line and exits: the
  // emitter is orphaned and must notice on its own (no PR_SET_PDEATHSIG here).
  char dir_template[] = "/tmp/fcpfc-orphan-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string out_file = std::string(dir_template) + "/out";
  auto started =
      runShell("ip netns exec " + ns_a_ + " " + binary_ +
               " pfc-emit --ifname va --priorities 3 --interval-us 1000 --stats-ms 50 >" +
               out_file + " 2>&1 & echo $!; i=0; while [ ! -s " + out_file +
               " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done");
  const int pid = std::atoi(started.out.c_str());
  ASSERT_GT(pid, 0) << started.out;
  // Gone (or a zombie waiting for whoever adopted it) within a few periods.
  auto alive = [&] {
    const std::string stat = testing::readFile("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    return !stat.empty() && paren != std::string::npos && stat.substr(paren + 2, 1) != "Z";
  };
  EXPECT_TRUE(testing::waitFor([&] { return !alive(); }, scaledMs(5000)));
  if (alive()) ::kill(pid, SIGKILL);
  const auto stats = statsLines(testing::readFile(out_file));
  ASSERT_FALSE(stats.empty()) << testing::readFile(out_file);
  EXPECT_EQ(stats.back().value("final", false), true) << testing::readFile(out_file);
  runShell("rm -rf " + std::string(dir_template));
}

}  // namespace
}  // namespace fabric_chaos
