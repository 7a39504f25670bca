// Helpers shared by the crypto tests: a scratch directory and X509_verify_cert against a CA.
#pragma once

#include <gtest/gtest.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "crypto/openssl_util.h"

namespace tributary::testing {

// The permission bits of `path` (an EXPECT fails, naming it, when it cannot be stat'ed).
inline mode_t FileMode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ = std::string(base && *base ? base : "/tmp") + "/tributary-crypto-XXXXXX";
    char* made = ::mkdtemp(templ.data());
    EXPECT_NE(made, nullptr) << "mkdtemp failed";
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// Verifies `leaf_pem` against the single trust anchor `ca_pem` for `purpose`
// (X509_PURPOSE_SSL_SERVER / _SSL_CLIENT / _ANY). Returns X509_V_OK or the verify error.
inline int VerifyAgainstCa(const std::string& ca_pem, const std::string& leaf_pem, int purpose) {
  using namespace crypto_internal;
  auto ca = ParseCertificate(ca_pem, "ca");
  auto leaf = ParseCertificate(leaf_pem, "leaf");
  EXPECT_TRUE(ca.ok() && leaf.ok());
  if (!ca.ok() || !leaf.ok()) return -1;
  X509StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca->get());
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), leaf->get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  const int ok = X509_verify_cert(ctx.get());
  const int err = X509_STORE_CTX_get_error(ctx.get());
  return ok == 1 ? X509_V_OK : (err == X509_V_OK ? -1 : err);
}

}  // namespace tributary::testing
