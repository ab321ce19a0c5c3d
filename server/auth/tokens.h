#pragma once
// API token secrets and identities: generating a secret ("fct_" + 64 hex digits from 32 random
// bytes), hashing it (SHA-256 hex, the only form the store keeps), reading a bearer credential,
// resolving it to an active token, and the first-start admin token. Failures are Statuses:
// kUnauthenticated for a bad credential (never saying whether a token is unknown or revoked),
// the store's own code otherwise. Stateless: any thread may call, as the Store allows.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/auth/random_source.h"
#include "store/store.h"

namespace fabric_chaos::auth {

inline constexpr std::string_view kSecretPrefix = "fct_";
inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kSecretLength = 4 + 2 * kSecretBytes;  // "fct_" + hex

// "fct_" followed by the bytes in lower-case hex.
std::string renderSecret(const uint8_t* bytes, size_t size);

// A new secret from kSecretBytes of `random`.
core::Result<std::string> generateSecret(RandomSource& random);

// True for "fct_" + 64 lower-case hex digits: anything else cannot be a token we issued.
bool isWellFormedSecret(std::string_view secret);

// Lower-case hex SHA-256 of `text` (OpenSSL EVP); kInternal if the digest fails.
core::Result<std::string> sha256Hex(std::string_view text);

// The credential of an "Authorization" header value: "Bearer <token>", scheme case-insensitive.
// kUnauthenticated naming what is wrong (empty header, another scheme, no token).
core::Result<std::string> parseBearer(std::string_view header_value);

// The active token whose secret this is. kUnauthenticated "unknown or revoked" for a secret that
// is malformed, unknown or revoked (one message for all, so a caller learns nothing about which
// tokens exist); other store failures are returned as they are.
core::Result<store::TokenRecord> authenticateSecret(store::Store& store, std::string_view secret);

struct IssuedToken {
  int64_t id = 0;
  std::string secret;  // shown to the caller once; only its hash is stored
};

// Generates a secret and stores the token under its hash.
core::Result<IssuedToken> issueToken(store::Store& store, RandomSource& random,
                                     const std::string& name, store::Role role);

// When no active admin token exists, creates one named "admin" and returns its secret;
// std::nullopt when there already is one.
core::Result<std::optional<std::string>> ensureAdminToken(store::Store& store,
                                                          RandomSource& random);
// The same with the system's random source.
core::Result<std::optional<std::string>> ensureAdminToken(store::Store& store);

}  // namespace fabric_chaos::auth
