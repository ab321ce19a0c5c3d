#pragma once
// In-memory sys::Nftables. run() records each script and applies it atomically to a model of
// tables, chains and rules, understanding the lines our injectors write: "add table F N",
// "delete table F N", "flush table F N", "add chain F T C ...", "add rule F T C ...". Like nft,
// deleting or adding into a missing table fails with kNotFound. listTable() returns a canned
// listing when one is set for an existing table, else one synthesized from the model (counters
// 0). run() calls are counted for failOnCall(). Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "injectors/sys/nftables.h"
#include "tests/fakes/fail_schedule.h"

namespace fabric_chaos::fakes {

class FakeNftables : public sys::Nftables {
 public:
  struct Call {
    std::string netns;
    std::string script;
  };

  // The nth run() call (1-based) fails with status and changes nothing.
  void failOnCall(int n, core::Status status);
  int mutatingCalls() const;
  // What probe() returns (default OK).
  void setProbeResult(core::Status status);
  // Every listTable() fails with status until cleared with std::nullopt.
  void setListTableError(std::optional<core::Status> status);
  // Returned by listTable() while the table exists.
  void setListing(const std::string& netns, const std::string& family, const std::string& name,
                  nlohmann::json listing);

  bool hasTable(const std::string& netns, const std::string& family, const std::string& name) const;
  // "family name" of every table in netns.
  std::vector<std::string> tables(const std::string& netns) const;
  // Chain names of a table, in creation order.
  std::vector<std::string> chains(const std::string& netns, const std::string& family,
                                  const std::string& name) const;
  std::vector<Call> scripts() const;  // successful and failed run() calls
  std::vector<std::string> probes() const;

  core::Status run(const std::string& netns, const std::string& script) override;
  core::Result<nlohmann::json> listTable(const std::string& netns, const std::string& family,
                                         const std::string& name) override;
  core::Status probe(const std::string& script) override;

 private:
  struct Chain {
    std::string name;
    std::string spec;
    std::vector<std::string> rules;
  };
  struct Table {
    std::vector<Chain> chains;
  };
  using Key = std::tuple<std::string, std::string, std::string>;  // netns, family, name

  mutable std::mutex mu_;
  std::map<Key, Table> tables_;
  std::map<Key, nlohmann::json> listings_;
  std::vector<Call> calls_;
  std::vector<std::string> probes_;
  FailSchedule schedule_;
  core::Status probe_result_;
  std::optional<core::Status> list_error_;
};

}  // namespace fabric_chaos::fakes
