#pragma once
// nftables through libnftables: runs nft scripts and lists tables as JSON inside a namespace.
// Errors carry nft's own error text. Thread-safe: every call makes its own nft context.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

class Nftables {
 public:
  virtual ~Nftables() = default;
  // Runs an nft script ("add table ...\nadd chain ...") atomically in netns.
  virtual core::Status run(const std::string& netns, const std::string& script) = 0;
  // `nft -j list table FAMILY NAME`; kNotFound when the table does not exist.
  virtual core::Result<nlohmann::json> listTable(const std::string& netns,
                                                 const std::string& family,
                                                 const std::string& name) = 0;
  // Whether this kernel accepts an nft rule set (used to probe numgen / egress hooks).
  virtual core::Status probe(const std::string& script) = 0;
};

std::unique_ptr<Nftables> makeLibNftables();

}  // namespace fabric_chaos::sys
