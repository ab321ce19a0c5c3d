#pragma once
// Shared by the transport and client tests: a temporary directory and a self-signed certificate
// made with the `openssl` command-line tool. Without the tool the certificate is empty and
// missing() says why: outside CI the tests skip with that message, in CI (env CI set) they fail.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fabric_chaos::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fc_tls_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path path() const { return path_; }
  std::string file(const std::string& relative) const { return (path_ / relative).string(); }
  void write(const std::string& relative, const std::string& content) const {
    std::filesystem::path file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
  }

 private:
  std::filesystem::path path_;
};

// A self-signed certificate (it is its own CA) for the given subjectAltName, e.g.
// "IP:127.0.0.1,DNS:localhost", written as <dir>/<name>.crt and <dir>/<name>.key.
struct SelfSignedCert {
  std::string cert_file;
  std::string key_file;
  std::string missing;  // why there is no certificate; "" when there is one

  static SelfSignedCert make(const TempDir& dir, const std::string& name,
                             const std::string& subject_alt_name) {
    SelfSignedCert out;
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      out.missing =
          "the openssl command-line tool (Debian package `openssl`, see deploy/install-deps.sh)";
      return out;
    }
    out.cert_file = dir.file(name + ".crt");
    out.key_file = dir.file(name + ".key");
    const std::string command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=fabric-chaos-test -addext subjectAltName=" +
        subject_alt_name + " -keyout '" + out.key_file + "' -out '" + out.cert_file +
        "' >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) {
      out.missing = "a certificate: `" + command + "` failed";
      out.cert_file.clear();
      out.key_file.clear();
    }
    return out;
  }
};

// In a test body: skips (outside CI) or fails (in CI) when the certificate could not be made.
#define FC_REQUIRE_CERT(cert)                                                   \
  do {                                                                          \
    if (!(cert).missing.empty()) {                                              \
      if (std::getenv("CI") != nullptr) FAIL() << "missing " << (cert).missing; \
      GTEST_SKIP() << "skipped outside CI: missing " << (cert).missing;         \
    }                                                                           \
  } while (0)

}  // namespace fabric_chaos::testing
