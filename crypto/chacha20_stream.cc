#include "crypto/chacha20_stream.h"

#include <openssl/evp.h>

#include <algorithm>

#include "core/check.h"

namespace tributary {

struct ChaCha20Stream::Ctx {
  EVP_CIPHER_CTX* cipher = nullptr;
  ~Ctx() { EVP_CIPHER_CTX_free(cipher); }
};

ChaCha20Stream::ChaCha20Stream(const std::array<uint8_t, 32>& seed, uint64_t nonce)
    : ctx_(std::make_unique<Ctx>()) {
  // OpenSSL's 16-byte IV: a 32-bit little-endian block counter, then the 96-bit nonce.
  uint8_t iv[16] = {};
  for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<uint8_t>(nonce >> (8 * i));
  ctx_->cipher = EVP_CIPHER_CTX_new();
  // Fails only when out of memory or when OpenSSL lacks ChaCha20: not an input error.
  TRIB_CHECK(ctx_->cipher &&
                 EVP_EncryptInit_ex(ctx_->cipher, EVP_chacha20(), nullptr, seed.data(), iv) == 1,
             "OpenSSL could not start a ChaCha20 stream");
}

ChaCha20Stream::~ChaCha20Stream() = default;

void ChaCha20Stream::Fill(std::span<uint8_t> out) {
  // The keystream is the encryption of zeros, read from one shared zero block (cheaper than
  // clearing `out` and encrypting it in place).
  static constexpr size_t kZeros = 32 * 1024;
  static const uint8_t zeros[kZeros] = {};
  size_t done = 0;
  while (done < out.size()) {
    const int n = static_cast<int>(std::min(out.size() - done, kZeros));
    int written = 0;
    TRIB_CHECK(
        EVP_EncryptUpdate(ctx_->cipher, out.data() + done, &written, zeros, n) == 1 && written == n,
        "ChaCha20 keystream failed");
    done += static_cast<size_t>(n);
  }
}

}  // namespace tributary
