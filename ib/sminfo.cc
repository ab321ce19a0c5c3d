#include "ib/sminfo.h"

#include <cinttypes>
#include <cstdio>

namespace fabric_chaos::ib {

const char* describe(SmState state) {
  switch (state) {
    case SmState::kNotActive:
      return "not-active";
    case SmState::kDiscovering:
      return "discovering";
    case SmState::kStandby:
      return "standby";
    case SmState::kMaster:
      return "master";
  }
  return "?";
}

core::Result<SmInfoReply> parseSminfo(const std::string& output) {
  const size_t at = output.find("sminfo: sm lid ");
  if (at != std::string::npos) {
    const size_t end = output.find('\n', at);
    const std::string line = output.substr(at, end == std::string::npos ? end : end - at);
    unsigned lid = 0;
    uint64_t guid = 0;
    unsigned activity = 0;
    int priority = 0;
    int state = 0;
    // Fixed text between the numbers; %n proves the whole pattern matched.
    int consumed = 0;
    if (std::sscanf(line.c_str(),
                    "sminfo: sm lid %u sm guid %" SCNx64
                    ", activity count %u priority %d state %d%n",
                    &lid, &guid, &activity, &priority, &state, &consumed) == 5 &&
        consumed > 0 && lid <= 0xffff && priority >= 0 && priority <= 15 && state >= 0 &&
        state <= 3) {
      return SmInfoReply{static_cast<uint16_t>(lid), guid, activity, priority,
                         static_cast<SmState>(state)};
    }
  }
  const std::string quoted = output.size() > 200 ? output.substr(0, 200) + "..." : output;
  return core::Status(core::StatusCode::kInvalidArgument,
                      "not an sminfo reply: \"" + quoted + "\"");
}

}  // namespace fabric_chaos::ib
