#include "tests/fakes/fake_nftables.h"

#include <algorithm>
#include <cerrno>
#include <sstream>

namespace fabric_chaos::fakes {
namespace {

core::Status nftNotFound(const std::string& line) {
  return core::Status(core::StatusCode::kNotFound,
                      "nft: Could not process rule: No such file or directory: " + line, ENOENT);
}

core::Status nftSyntax(const std::string& line) {
  return core::Status(core::StatusCode::kInternal, "nft: syntax error: " + line);
}

}  // namespace

void FakeNftables::failOnCall(int n, core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  schedule_.failOn(n, std::move(status));
}

int FakeNftables::mutatingCalls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return schedule_.calls();
}

void FakeNftables::setProbeResult(core::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  probe_result_ = std::move(status);
}

void FakeNftables::setListTableError(std::optional<core::Status> status) {
  std::lock_guard<std::mutex> lock(mu_);
  list_error_ = std::move(status);
}

void FakeNftables::setListing(const std::string& netns, const std::string& family,
                              const std::string& name, nlohmann::json listing) {
  std::lock_guard<std::mutex> lock(mu_);
  listings_[{netns, family, name}] = std::move(listing);
}

bool FakeNftables::hasTable(const std::string& netns, const std::string& family,
                            const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return tables_.count({netns, family, name}) > 0;
}

std::vector<std::string> FakeNftables::tables(const std::string& netns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [key, table] : tables_) {
    if (std::get<0>(key) == netns) out.push_back(std::get<1>(key) + " " + std::get<2>(key));
  }
  return out;
}

std::vector<std::string> FakeNftables::chains(const std::string& netns, const std::string& family,
                                              const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  auto it = tables_.find({netns, family, name});
  if (it == tables_.end()) return out;
  for (const Chain& chain : it->second.chains) out.push_back(chain.name);
  return out;
}

std::vector<FakeNftables::Call> FakeNftables::scripts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::vector<std::string> FakeNftables::probes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return probes_;
}

core::Status FakeNftables::run(const std::string& netns, const std::string& script) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back({netns, script});
  if (auto failure = schedule_.next()) return *failure;

  std::map<Key, Table> next = tables_;  // a script is one transaction, like nft's
  std::istringstream lines(script);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string verb, object, family, table, chain;
    words >> verb;
    if (verb.empty()) continue;
    words >> object >> family >> table;
    if (family.empty() || table.empty()) return nftSyntax(line);
    Key key{netns, family, table};
    if (verb == "add" && object == "table") {
      next[key];  // adding an existing table is a no-op in nft too
    } else if (verb == "delete" && object == "table") {
      if (next.erase(key) == 0) return nftNotFound(line);
    } else if (verb == "flush" && object == "table") {
      auto it = next.find(key);
      if (it == next.end()) return nftNotFound(line);
      for (Chain& c : it->second.chains) c.rules.clear();
    } else if (verb == "add" && (object == "chain" || object == "rule")) {
      words >> chain;
      if (chain.empty()) return nftSyntax(line);
      auto it = next.find(key);
      if (it == next.end()) return nftNotFound(line);
      std::string rest;
      std::getline(words, rest);
      std::vector<Chain>& chains = it->second.chains;
      auto found = std::find_if(chains.begin(), chains.end(),
                                [&](const Chain& c) { return c.name == chain; });
      if (object == "chain") {
        if (found == chains.end()) chains.push_back({chain, rest, {}});
      } else {
        if (found == chains.end()) return nftNotFound(line);
        found->rules.push_back(rest);
      }
    } else {
      return nftSyntax(line);
    }
  }
  tables_ = std::move(next);
  return core::Status::ok();
}

core::Result<nlohmann::json> FakeNftables::listTable(const std::string& netns,
                                                     const std::string& family,
                                                     const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (list_error_) return *list_error_;
  Key key{netns, family, name};
  auto it = tables_.find(key);
  if (it == tables_.end()) {
    return core::Status(core::StatusCode::kNotFound,
                        "nftables table " + family + " " + name + " does not exist", ENOENT);
  }
  auto canned = listings_.find(key);
  if (canned != listings_.end()) return canned->second;

  nlohmann::json items = nlohmann::json::array();
  items.push_back({{"metainfo", {{"json_schema_version", 1}}}});
  items.push_back({{"table", {{"family", family}, {"name", name}}}});
  for (const Chain& chain : it->second.chains) {
    items.push_back({{"chain", {{"family", family}, {"table", name}, {"name", chain.name}}}});
    for (const std::string& rule : chain.rules) {
      nlohmann::json expr = nlohmann::json::array();
      if (rule.find("numgen") != std::string::npos) expr.push_back({{"match", {}}});
      if (rule.find("counter") != std::string::npos) {
        expr.push_back({{"counter", {{"packets", 0u}, {"bytes", 0u}}}});
      }
      if (rule.find("drop") != std::string::npos) expr.push_back({{"drop", nullptr}});
      items.push_back(
          {{"rule", {{"family", family}, {"table", name}, {"chain", chain.name}, {"expr", expr}}}});
    }
  }
  return nlohmann::json{{"nftables", items}};
}

core::Status FakeNftables::probe(const std::string& script) {
  std::lock_guard<std::mutex> lock(mu_);
  probes_.push_back(script);
  return probe_result_;
}

}  // namespace fabric_chaos::fakes
