// HKDF-SHA256 (RFC 5869) through OpenSSL's EVP_KDF: keys derived from a shared secret, each bound
// to a purpose by `info` (the protocol, the round, the two parties), so one secret never keys two
// things.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tributary/status.h"

namespace tributary {

// Fills `out` (1..8160 bytes) with HKDF-SHA256(secret, salt, info).
Status HkdfSha256(std::span<const uint8_t> secret, std::span<const uint8_t> salt,
                  std::string_view info, std::span<uint8_t> out);

}  // namespace tributary
