// X25519 key agreement (RFC 7748) through OpenSSL's EVP interface, on raw 32-byte keys.
//
//   X25519KeyPair a = *X25519KeyPair::Generate(), b = *X25519KeyPair::Generate();
//   Key32 ab = *a.Agree(b.public_key);  // == *b.Agree(a.public_key)
//
// The shared secret is raw curve output: derive keys from it with HKDF (crypto/hkdf.h), never use
// it directly. Agree refuses a peer key whose shared secret is all zeros (a small-order point).
// Thread-safe (no shared state).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "tributary/result.h"

namespace tributary {

using Key32 = std::array<uint8_t, 32>;

struct X25519KeyPair {
  Key32 public_key{};
  Key32 private_key{};

  static Result<X25519KeyPair> Generate();
  // The key pair whose private key is `private_key` (its public key is computed).
  static Result<X25519KeyPair> FromPrivate(const Key32& private_key);
  // The shared secret with `peer_public` (32 bytes); InvalidArgument for another length or a
  // small-order point.
  Result<Key32> Agree(std::span<const uint8_t> peer_public) const;
};

}  // namespace tributary
