#pragma once
// The lab switch's modelled egress (scenarios::EgressModel): how `lab up --link-rate R --buffer B
// [--lossless-dscp D,...]` is read and checked, and the tc commands that build it on one port.
// Pure, so the numbers and the commands are table-tested; NetnsLab runs the commands.
//
// On a port (the host kernel has htb, bfifo and u32, not prio, mqprio or RED):
//   root htb 1: (default class 1:20)
//     1:1  the line: rate = ceil = R
//       1:10 lossless/RDMA class: rate R/2, ceil R, prio 0 -> bfifo limit B  (handle 10:)
//       1:20 best effort:         rate R/2, ceil R, prio 1 -> bfifo limit B  (handle 20:)
//   u32 filters: IPv4 DSCP in the lossless set -> 1:10; everything else falls to 1:20.
// Each class is guaranteed half the line and borrows all of it when the other is idle (ETS-like);
// a full buffer drops the arriving packet (drop-tail).

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

// "1gbit", "100mbit", "500kbit", "25gbit" or plain bits per second; decimal multiples, as tc's.
// kInvalidArgument naming --link-rate.
core::Result<int64_t> parseLinkRate(const std::string& text);
// "256k", "1m", "64kb" or plain bytes; binary multiples (k = 1024), as tc's sizes.
// kInvalidArgument naming --buffer.
core::Result<int64_t> parseBufferSize(const std::string& text);
// "26" or "26,24,46": each 0-63, no repeats. kInvalidArgument naming --lossless-dscp.
core::Result<std::vector<int>> parseDscpList(const std::string& text);

// Rate 1 Mbit/s..100 Gbit/s; buffer from two full frames (3028 bytes) to 64 MiB; DSCP 0-63.
// kInvalidArgument naming the flag.
core::Status checkEgressModel(const scenarios::EgressModel& model);

// The tc commands (arguments after "tc") that give `ifname` in `netns` this egress, from a port
// with the kernel's default qdisc. `tc qdisc del dev IF root` undoes them all.
std::vector<std::vector<std::string>> egressCommands(const std::string& netns,
                                                     const std::string& ifname,
                                                     const scenarios::EgressModel& model);

// "1 Gbit/s, 256 KiB per class, lossless DSCP 26" for progress lines.
std::string describeEgress(const scenarios::EgressModel& model);

}  // namespace fabric_chaos::lab
