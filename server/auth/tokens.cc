#include "server/auth/tokens.h"

#include <openssl/evp.h>

#include <array>
#include <cctype>

namespace fabric_chaos::auth {

using core::Status;
using core::StatusCode;

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

std::string toHex(const uint8_t* bytes, size_t size) {
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kHexDigits[bytes[i] >> 4]);
    out.push_back(kHexDigits[bytes[i] & 0x0f]);
  }
  return out;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool isSpace(char c) { return c == ' ' || c == '\t'; }

Status unauthenticatedToken() {
  return Status(StatusCode::kUnauthenticated, "the bearer token is unknown or revoked");
}

}  // namespace

std::string renderSecret(const uint8_t* bytes, size_t size) {
  return std::string(kSecretPrefix) + toHex(bytes, size);
}

core::Result<std::string> generateSecret(RandomSource& random) {
  std::array<uint8_t, kSecretBytes> bytes{};
  if (Status s = random.fill(bytes.data(), bytes.size()); !s.isOk()) {
    return s.withContext("generating a token secret");
  }
  return renderSecret(bytes.data(), bytes.size());
}

bool isWellFormedSecret(std::string_view secret) {
  if (secret.size() != kSecretLength || secret.substr(0, kSecretPrefix.size()) != kSecretPrefix) {
    return false;
  }
  for (char c : secret.substr(kSecretPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

core::Result<std::string> sha256Hex(std::string_view text) {
  std::array<uint8_t, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    return Status(StatusCode::kInternal, "SHA-256 digest failed (OpenSSL EVP_Digest)");
  }
  return toHex(digest.data(), length);
}

core::Result<std::string> parseBearer(std::string_view header_value) {
  size_t start = 0;
  while (start < header_value.size() && isSpace(header_value[start])) ++start;
  size_t end = header_value.size();
  while (end > start && isSpace(header_value[end - 1])) --end;
  std::string_view value = header_value.substr(start, end - start);
  if (value.empty()) {
    return Status(StatusCode::kUnauthenticated,
                  "the Authorization header is empty; expected \"Bearer <token>\"");
  }
  size_t space = 0;
  while (space < value.size() && !isSpace(value[space])) ++space;
  std::string_view scheme = value.substr(0, space);
  if (!equalsIgnoreCase(scheme, "bearer")) {
    // Name the scheme but never echo the credential that follows it.
    return Status(StatusCode::kUnauthenticated, "the Authorization header uses the \"" +
                                                    std::string(scheme.substr(0, 32)) +
                                                    "\" scheme; expected \"Bearer <token>\"");
  }
  while (space < value.size() && isSpace(value[space])) ++space;
  std::string_view token = value.substr(space);
  if (token.empty()) {
    return Status(StatusCode::kUnauthenticated,
                  "the Authorization header has the Bearer scheme but no token");
  }
  return std::string(token);
}

core::Result<store::TokenRecord> authenticateSecret(store::Store& store, std::string_view secret) {
  // A string that is not shaped like one of our secrets cannot match a stored hash: answer
  // without touching the store.
  if (!isWellFormedSecret(secret)) return unauthenticatedToken();
  auto hash = sha256Hex(secret);
  if (!hash) return hash.status();
  // The lookup is by hash through an index, not a byte-by-byte comparison of the secret in our
  // code, so there is no secret-dependent early exit to time: a constant-time compare would not
  // add anything. Timing can at most reveal a prefix of the SHA-256, which does not help to find
  // a preimage.
  auto token = store.tokenByHash(*hash);
  if (!token) {
    if (token.status().code() == StatusCode::kNotFound) return unauthenticatedToken();
    return token.status();
  }
  if (token->revoked_ms != 0) return unauthenticatedToken();
  return token;
}

core::Result<IssuedToken> issueToken(store::Store& store, RandomSource& random,
                                     const std::string& name, store::Role role) {
  auto secret = generateSecret(random);
  if (!secret) return secret.status();
  auto hash = sha256Hex(*secret);
  if (!hash) return hash.status();
  auto id = store.createToken(name, role, *hash);
  if (!id) return id.status();
  return IssuedToken{*id, std::move(secret.value())};
}

core::Result<std::optional<std::string>> ensureAdminToken(store::Store& store,
                                                          RandomSource& random) {
  auto admins = store.countActiveTokens(store::Role::kAdmin);
  if (!admins) return admins.status().withContext("counting admin tokens");
  if (*admins > 0) return std::optional<std::string>();
  auto issued = issueToken(store, random, "admin", store::Role::kAdmin);
  if (!issued) return issued.status().withContext("creating the admin token");
  return std::optional<std::string>(std::move(issued->secret));
}

core::Result<std::optional<std::string>> ensureAdminToken(store::Store& store) {
  auto random = makeSystemRandomSource();
  return ensureAdminToken(store, *random);
}

}  // namespace fabric_chaos::auth
