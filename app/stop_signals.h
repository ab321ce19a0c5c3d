#pragma once
// The stop signals every long-running subcommand honours: SIGTERM and SIGINT call `handler`
// (which sets the command's stop flag), without SA_RESTART, so that a blocking sleep or poll
// returns at once and the loop sees the flag.

namespace fabric_chaos::app {

void installStopHandlers(void (*handler)(int));

}  // namespace fabric_chaos::app
