// SecureRandomBytes: bytes from OpenSSL's CSPRNG (RAND_priv_bytes), for keys, seeds and nonces.
// Never for simulation randomness (core/rng.h is seeded and reproducible; this is not).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "tributary/status.h"

namespace tributary {

// Fills `out`; Internal when OpenSSL's generator is not seeded (it then fills nothing usable).
Status SecureRandomBytes(std::span<uint8_t> out);

}  // namespace tributary
