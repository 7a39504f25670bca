#include "crypto/sha256.h"

#include <openssl/evp.h>

#include "core/check.h"

namespace tributary {

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;
  ~Ctx() { EVP_MD_CTX_free(md); }
};

// OpenSSL fails these only when out of memory or misconfigured: not a recoverable input error.
Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  TRIB_CHECK(ctx_->md && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1,
             "OpenSSL could not initialize a SHA-256 digest");
}

Sha256::~Sha256() = default;

void Sha256::Update(std::span<const uint8_t> data) {
  if (!data.empty()) EVP_DigestUpdate(ctx_->md, data.data(), data.size());
}

void Sha256::Update(std::string_view text) {
  if (!text.empty()) EVP_DigestUpdate(ctx_->md, text.data(), text.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_->md, digest, &n);
  std::string hex(2 * n, '0');
  static constexpr char kDigits[] = "0123456789abcdef";
  for (unsigned int i = 0; i < n; ++i) {
    hex[2 * i] = kDigits[digest[i] >> 4];
    hex[2 * i + 1] = kDigits[digest[i] & 15];
  }
  return hex;
}

}  // namespace tributary
