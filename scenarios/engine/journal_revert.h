#pragma once
// Taking back a journaled fault outside the run that applied it: start-up recovery (a previous
// serve died with faults applied) and an operator's "revert now" (POST /v1/faults/{id}/revert).
// Both go through the agent named in the journal entry, the one that applied the fault.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "scenarios/engine/agent_directory.h"
#include "store/store.h"

namespace fabric_chaos::scenarios {

struct StartupRecovery {
  int reverted = 0;                  // journal entries reverted now
  int failed = 0;                    // entries that could not be reverted (still unreverted)
  std::vector<int64_t> interrupted;  // runs marked interrupted
};

// Reverts `entry` through its agent, marks it reverted and, when it belongs to a run, adds a
// fault_reverted event with `reason` to that run. Touches nothing in the store when the revert
// fails.
core::Status revertJournalEntry(store::Store& store, AgentDirectory& agents,
                                const store::JournalEntry& entry, const std::string& reason);

// Reverts every entry the journal does not mark reverted, newest first (a failure is counted and
// logged; the entry stays for GET /v1/faults and the next start), then marks the runs a previous
// process left unfinished as interrupted.
core::Result<StartupRecovery> recoverAtStartup(store::Store& store, AgentDirectory& agents);

}  // namespace fabric_chaos::scenarios
