// AES-256-GCM sealing (OpenSSL EVP) of small messages between two parties that share a key:
// secure aggregation encrypts the secret shares one client sends another through the
// coordinator, which may read and change what it relays.
//
//   sealed = nonce (12 random bytes) || ciphertext || tag (16 bytes)
//
// `aad` binds the message to its context (run, round, sender, recipient): a sealed message moved
// to another context, or changed in any byte, fails to open. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

inline constexpr size_t kAeadOverheadBytes = 12 + 16;

Result<std::vector<uint8_t>> AeadSeal(const std::array<uint8_t, 32>& key, std::string_view aad,
                                      std::span<const uint8_t> plaintext);
// The plaintext; PermissionDenied ("authentication failed") when the key, the context or any byte
// differs, InvalidArgument when `sealed` is shorter than the overhead.
Result<std::vector<uint8_t>> AeadOpen(const std::array<uint8_t, 32>& key, std::string_view aad,
                                      std::span<const uint8_t> sealed);

}  // namespace tributary
