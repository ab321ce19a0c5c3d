#include "scenarios/engine/journal_revert.h"

#include "core/clock.h"
#include "core/log.h"
#include "injectors/injector.h"

namespace fabric_chaos::scenarios {

using core::Status;
using nlohmann::json;

namespace {

// Journal entries name the agent that applied the fault (fault_timeline.cc writes them), so that
// the same agent reverts it. Removes the field, leaving the fault's own JSON.
AgentRef takeJournalAgent(json& doc) {
  AgentRef ref;
  if (doc.is_object() && doc.contains("agent")) {
    ref.name = doc["agent"].value("name", "local");
    ref.token_file = doc["agent"].value("token_file", "");
    doc.erase("agent");
  }
  return ref;
}

}  // namespace

Status revertJournalEntry(store::Store& store, AgentDirectory& agents,
                          const store::JournalEntry& entry, const std::string& reason) {
  const std::string id = std::to_string(entry.id);
  json doc = entry.fault;
  const AgentRef ref = takeJournalAgent(doc);
  auto fault = injectors::faultFromJson(doc);
  if (!fault.isOk()) return fault.status().withContext("journal entry " + id);
  auto agent = agents.agentFor(ref);
  if (!agent.isOk()) return agent.status().withContext("journal entry " + id);
  if (Status s = (*agent)->revertFault(*fault, entry.prior); !s.isOk()) {
    return s.withContext("reverting fault " + id);
  }
  FC_RETURN_IF_ERROR(store.journalMark(entry.id, "reverted"));
  core::logInfo(reason + ": reverted fault " + id + ": " + entry.fault.dump());
  if (entry.run_id != 0) {
    (void)store.appendEvent(
        {entry.run_id,
         0,
         core::wallNowMs(),
         "fault_reverted",
         {{"reason", reason}, {"journal_id", entry.id}, {"fault", entry.fault}}});
  }
  return Status::ok();
}

core::Result<StartupRecovery> recoverAtStartup(store::Store& store, AgentDirectory& agents) {
  StartupRecovery report;
  auto entries = store.unrevertedJournal();
  if (!entries.isOk()) return entries.status();
  for (const auto& entry : *entries) {
    if (Status s = revertJournalEntry(store, agents, entry, "start-up recovery"); s.isOk()) {
      ++report.reverted;
    } else {
      ++report.failed;
      core::logError("start-up recovery: cannot revert " + entry.fault.dump() + ": " +
                     s.toString());
    }
  }
  auto interrupted = store.interruptUnfinishedRuns();
  if (!interrupted.isOk()) return interrupted.status();
  report.interrupted = interrupted.value();
  return report;
}

}  // namespace fabric_chaos::scenarios
