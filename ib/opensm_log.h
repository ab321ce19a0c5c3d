#pragma once
// Reads OpenSM's log for when it became master: the line "Entering MASTER state", stamped in
// local time with microseconds ("Dec 04 14:12:15 656289 [..] 0x80 -> Entering MASTER state").
// The takeover an SM itself reports, against which the IB probe's is checked (tests, bench).
// Pure, but for the local time zone and the current year, which the stamps leave out.

#include <optional>
#include <string>

namespace fabric_chaos::ib {

// Milliseconds since the epoch of the first "Entering MASTER state" in `log` stamped at or after
// `after_ms`; nullopt when there is none.
std::optional<double> enteredMasterAtMs(const std::string& log, double after_ms);

}  // namespace fabric_chaos::ib
