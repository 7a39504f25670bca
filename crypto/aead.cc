#include "crypto/aead.h"

#include <openssl/evp.h>

#include <climits>
#include <string>

#include "crypto/openssl_util.h"
#include "crypto/secure_random.h"

namespace tributary {
namespace {

using CipherCtxPtr = std::unique_ptr<EVP_CIPHER_CTX, crypto_internal::Deleter<EVP_CIPHER_CTX_free>>;
constexpr size_t kNonce = 12, kTag = 16;

Status Fail(std::string_view what) {
  return crypto_internal::OpenSslStatus(StatusCode::kInternal, what);
}

}  // namespace

Result<std::vector<uint8_t>> AeadSeal(const std::array<uint8_t, 32>& key, std::string_view aad,
                                      std::span<const uint8_t> plaintext) {
  if (plaintext.size() > INT_MAX / 2 || aad.size() > INT_MAX / 2)
    return Status::InvalidArgument("AeadSeal: message too large");
  std::vector<uint8_t> out(kNonce + plaintext.size() + kTag);
  TRIB_RETURN_IF_ERROR(SecureRandomBytes(std::span(out.data(), kNonce)));
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int n = 0;
  if (!ctx ||
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), out.data()) != 1)
    return Fail("starting AES-256-GCM");
  if (!aad.empty() &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const uint8_t*>(aad.data()),
                        static_cast<int>(aad.size())) != 1)
    return Fail("AES-256-GCM associated data");
  if (!plaintext.empty() && EVP_EncryptUpdate(ctx.get(), out.data() + kNonce, &n, plaintext.data(),
                                              static_cast<int>(plaintext.size())) != 1)
    return Fail("AES-256-GCM encryption");
  if (EVP_EncryptFinal_ex(ctx.get(), out.data() + kNonce + plaintext.size(), &n) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTag,
                          out.data() + kNonce + plaintext.size()) != 1)
    return Fail("AES-256-GCM tag");
  return out;
}

Result<std::vector<uint8_t>> AeadOpen(const std::array<uint8_t, 32>& key, std::string_view aad,
                                      std::span<const uint8_t> sealed) {
  if (sealed.size() < kNonce + kTag)
    return Status::InvalidArgument("a sealed message has at least " +
                                   std::to_string(kNonce + kTag) + " bytes, not " +
                                   std::to_string(sealed.size()));
  if (sealed.size() > INT_MAX / 2 || aad.size() > INT_MAX / 2)
    return Status::InvalidArgument("AeadOpen: message too large");
  const size_t body = sealed.size() - kNonce - kTag;
  std::vector<uint8_t> out(body);
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int n = 0;
  if (!ctx ||
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), sealed.data()) != 1)
    return Fail("starting AES-256-GCM");
  if (!aad.empty() &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &n, reinterpret_cast<const uint8_t*>(aad.data()),
                        static_cast<int>(aad.size())) != 1)
    return Fail("AES-256-GCM associated data");
  if (body > 0 && EVP_DecryptUpdate(ctx.get(), out.data(), &n, sealed.data() + kNonce,
                                    static_cast<int>(body)) != 1)
    return Fail("AES-256-GCM decryption");
  // The tag is only read; OpenSSL's ctrl takes a non-const pointer.
  std::array<uint8_t, kTag> tag;
  std::copy(sealed.end() - kTag, sealed.end(), tag.begin());
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTag, tag.data()) != 1)
    return Fail("AES-256-GCM tag");
  uint8_t final_block[16];
  if (EVP_DecryptFinal_ex(ctx.get(), final_block, &n) != 1) {
    crypto_internal::DrainOpenSslErrors();
    return Status::PermissionDenied(
        "authentication failed: the sealed message was changed, or sealed for another context");
  }
  return out;
}

}  // namespace tributary
