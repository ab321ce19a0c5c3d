#pragma once
// Shared by the libFuzzer targets: how a target reports a broken property (a message on stderr,
// then abort, so that libFuzzer keeps the input) and what an error for bad input must look like.
// Header-only; a fuzz process runs one input at a time.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/status.h"

namespace fabric_chaos::fuzz {

[[noreturn]] inline void fail(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", target, what.c_str());
  std::abort();
}

// An error must carry a message, and its code must blame the input: kInvalidArgument or
// kUnprocessable when input_codes_only, otherwise anything but kInternal (a bug). OK passes.
inline void expectNamedError(const char* target, const core::Status& status, const char* step,
                             bool input_codes_only) {
  if (status.isOk()) return;
  if (status.message().empty()) fail(target, std::string(step) + ": an error without a message");
  if (input_codes_only) {
    if (status.code() != core::StatusCode::kInvalidArgument &&
        status.code() != core::StatusCode::kUnprocessable) {
      fail(target, std::string(step) + ": unexpected code for bad input: " + status.toString());
    }
  } else if (status.code() == core::StatusCode::kInternal) {
    fail(target, std::string(step) + ": internal error for bad input: " + status.toString());
  }
}

}  // namespace fabric_chaos::fuzz
