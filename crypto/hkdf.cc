#include "crypto/hkdf.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <string>

#include "crypto/openssl_util.h"

namespace tributary {
namespace {
using KdfPtr = std::unique_ptr<EVP_KDF, crypto_internal::Deleter<EVP_KDF_free>>;
using KdfCtxPtr = std::unique_ptr<EVP_KDF_CTX, crypto_internal::Deleter<EVP_KDF_CTX_free>>;
}  // namespace

Status HkdfSha256(std::span<const uint8_t> secret, std::span<const uint8_t> salt,
                  std::string_view info, std::span<uint8_t> out) {
  if (out.empty() || out.size() > 255 * 32)
    return Status::InvalidArgument("HKDF-SHA256 output must be 1..8160 bytes, not " +
                                   std::to_string(out.size()));
  KdfPtr kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr));
  KdfCtxPtr ctx(kdf ? EVP_KDF_CTX_new(kdf.get()) : nullptr);
  if (!ctx) return crypto_internal::OpenSslStatus(StatusCode::kInternal, "fetching HKDF");
  char digest[] = "SHA256";
  // OpenSSL's params take non-const pointers; it does not write through them.
  uint8_t empty = 0;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(
          OSSL_KDF_PARAM_KEY, secret.empty() ? &empty : const_cast<uint8_t*>(secret.data()),
          secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                        salt.empty() ? &empty : const_cast<uint8_t*>(salt.data()),
                                        salt.size()),
      OSSL_PARAM_construct_octet_string(
          OSSL_KDF_PARAM_INFO, const_cast<char*>(info.empty() ? "" : info.data()), info.size()),
      OSSL_PARAM_construct_end()};
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), params) != 1)
    return crypto_internal::OpenSslStatus(StatusCode::kInternal, "HKDF-SHA256 failed");
  return Status::Ok();
}

}  // namespace tributary
