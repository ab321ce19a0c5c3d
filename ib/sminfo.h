#pragma once
// Reads what infiniband-diags' `sminfo` prints about a subnet manager: "sminfo: sm lid 3 sm guid
// 0x100003, activity count 118 priority 13 state 2 SMINFO_STANDBY". The IB lab waits on it and
// the tests use it as their independent observer of mastership. Pure.

#include <cstdint>
#include <string>

#include "core/status.h"

namespace fabric_chaos::ib {

// SMInfo's SMState (IBA 14.4.1): what an SM says it is doing.
enum class SmState { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };
const char* describe(SmState state);  // "not-active", "discovering", "standby", "master"

struct SmInfoReply {
  uint16_t lid = 0;
  uint64_t guid = 0;
  uint32_t activity = 0;  // ActCount: a live master keeps raising it
  int priority = 0;
  SmState state = SmState::kNotActive;
};

// The first "sminfo: sm lid ..." line of `output`; kInvalidArgument quoting the output when there
// is none (sminfo prints its errors, "iberror: failed: query", to stderr and exits non-zero).
core::Result<SmInfoReply> parseSminfo(const std::string& output);

}  // namespace fabric_chaos::ib
