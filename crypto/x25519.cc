#include "crypto/x25519.h"

#include <openssl/evp.h>

#include <algorithm>

#include "crypto/openssl_util.h"
#include "crypto/secure_random.h"

namespace tributary {
namespace {

using crypto_internal::EvpPkeyPtr;
using crypto_internal::OpenSslStatus;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, crypto_internal::Deleter<EVP_PKEY_CTX_free>>;

}  // namespace

Result<X25519KeyPair> X25519KeyPair::Generate() {
  Key32 priv;
  TRIB_RETURN_IF_ERROR(SecureRandomBytes(priv));
  return FromPrivate(priv);
}

Result<X25519KeyPair> X25519KeyPair::FromPrivate(const Key32& private_key) {
  EvpPkeyPtr key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, private_key.data(),
                                              private_key.size()));
  if (!key) return OpenSslStatus(StatusCode::kInternal, "making an X25519 key");
  X25519KeyPair pair;
  pair.private_key = private_key;
  size_t n = pair.public_key.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), pair.public_key.data(), &n) != 1 || n != 32)
    return OpenSslStatus(StatusCode::kInternal, "reading an X25519 public key");
  return pair;
}

Result<Key32> X25519KeyPair::Agree(std::span<const uint8_t> peer_public) const {
  if (peer_public.size() != 32)
    return Status::InvalidArgument("an X25519 public key has 32 bytes, not " +
                                   std::to_string(peer_public.size()));
  EvpPkeyPtr self(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, private_key.data(),
                                               private_key.size()));
  EvpPkeyPtr peer(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer_public.data(),
                                              peer_public.size()));
  if (!self || !peer) return OpenSslStatus(StatusCode::kInvalidArgument, "loading X25519 keys");
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new(self.get(), nullptr));
  Key32 secret{};
  size_t n = secret.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1 ||
      EVP_PKEY_derive(ctx.get(), secret.data(), &n) != 1 || n != 32)
    return OpenSslStatus(StatusCode::kInvalidArgument,
                         "X25519 key agreement failed (a small-order or invalid peer key)");
  if (std::all_of(secret.begin(), secret.end(), [](uint8_t b) { return b == 0; }))
    return Status::InvalidArgument("X25519 key agreement gave all zeros (a small-order peer key)");
  return secret;
}

}  // namespace tributary
