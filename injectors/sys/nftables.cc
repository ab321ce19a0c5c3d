#include "injectors/sys/nftables.h"

#include <nftables/libnftables.h>

#include <cerrno>
#include <mutex>
#include <string_view>

#include "injectors/sys/netns.h"

namespace fabric_chaos::sys {
namespace {

struct NftOutput {
  bool ok = false;
  std::string output;
  std::string error;
};

// libnftables keeps a little process-wide state (xtables compat and GMP set-up on first
// context), so contexts are created and used one at a time. Constant-initialized: no dynamic
// constructor runs at start-up.
std::mutex& nftLock() {
  static std::mutex lock;
  return lock;
}

// Runs script with a fresh context on the calling thread (so in its network namespace).
NftOutput runScript(const std::string& script, bool json_output) {
  NftOutput out;
  std::lock_guard<std::mutex> guard(nftLock());
  nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  if (ctx == nullptr) {
    out.error = "cannot create an nftables context";
    return out;
  }
  nft_ctx_buffer_output(ctx);
  nft_ctx_buffer_error(ctx);
  if (json_output) {
    nft_ctx_output_set_flags(ctx, nft_ctx_output_get_flags(ctx) | NFT_CTX_OUTPUT_JSON);
  }
  out.ok = nft_run_cmd_from_buffer(ctx, script.c_str()) == 0;
  if (const char* text = nft_ctx_get_output_buffer(ctx)) out.output = text;
  if (const char* text = nft_ctx_get_error_buffer(ctx)) out.error = text;
  nft_ctx_free(ctx);
  return out;
}

// nft's error buffer is "Error: <reason>\n<offending command>\n<carets>\n"; keep the reason and
// the command on one line.
std::string summarize(const std::string& error) {
  std::string summary;
  size_t start = 0;
  for (int line = 0; line < 2 && start < error.size(); ++line) {
    size_t end = error.find('\n', start);
    if (end == std::string::npos) end = error.size();
    std::string_view text(error.data() + start, end - start);
    if (line == 0 && text.substr(0, 7) == "Error: ") text.remove_prefix(7);
    if (!text.empty()) {
      if (!summary.empty()) summary += ": ";
      summary += text;
    }
    start = end + 1;
  }
  return summary.empty() ? std::string("nft failed without a message") : summary;
}

core::Status nftFailure(const NftOutput& out) {
  const std::string summary = "nft: " + summarize(out.error);
  struct Known {
    const char* text;
    core::StatusCode code;
    int err;
  };
  static constexpr Known kKnown[] = {
      {"No such file or directory", core::StatusCode::kNotFound, ENOENT},
      {"Operation not permitted", core::StatusCode::kPermissionDenied, EPERM},
      {"Permission denied", core::StatusCode::kPermissionDenied, EACCES},
      {"Operation not supported", core::StatusCode::kNotSupported, EOPNOTSUPP},
      {"Protocol not supported", core::StatusCode::kNotSupported, EPROTONOSUPPORT},
      {"Address family not supported", core::StatusCode::kNotSupported, EAFNOSUPPORT},
      {"File exists", core::StatusCode::kAlreadyExists, EEXIST},
      {"Device or resource busy", core::StatusCode::kUnavailable, EBUSY},
  };
  for (const Known& known : kKnown) {
    if (out.error.find(known.text) != std::string::npos) {
      return core::Status(known.code, summary, known.err);
    }
  }
  return core::Status(core::StatusCode::kInternal, summary);
}

// Families and table names we build ourselves; anything else would be nft syntax injection.
bool isPlainWord(const std::string& word) {
  if (word.empty() || word.size() > 64) return false;
  for (char c : word) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

class LibNftables : public Nftables {
 public:
  core::Status run(const std::string& netns, const std::string& script) override {
    return runInNetns(netns, [&]() -> core::Status {
      NftOutput out = runScript(script, false);
      return out.ok ? core::Status::ok() : nftFailure(out);
    });
  }

  core::Result<nlohmann::json> listTable(const std::string& netns, const std::string& family,
                                         const std::string& name) override {
    if (!isPlainWord(family) || !isPlainWord(name)) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "invalid nftables table '" + family + " " + name + "'");
    }
    nlohmann::json doc;
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      NftOutput out = runScript("list table " + family + " " + name, true);
      if (!out.ok) {
        core::Status failure = nftFailure(out);
        if (failure.code() == core::StatusCode::kNotFound) {
          return core::Status(core::StatusCode::kNotFound,
                              "nftables table " + family + " " + name + " does not exist",
                              failure.origin());
        }
        return failure;
      }
      doc = nlohmann::json::parse(out.output, nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded()) {
        return core::Status(core::StatusCode::kInternal,
                            "nft printed JSON that does not parse for table " + name);
      }
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return doc;
  }

  core::Status probe(const std::string& script) override {
    return runInScratchNetns([&]() -> core::Status {
      NftOutput out = runScript(script, false);
      return out.ok ? core::Status::ok() : nftFailure(out);
    });
  }
};

}  // namespace

std::unique_ptr<Nftables> makeLibNftables() { return std::make_unique<LibNftables>(); }

}  // namespace fabric_chaos::sys
