// Masks of secure aggregation: the ChaCha20 expansion of a 32-byte seed (crypto/chacha20_stream.h)
// added to, or subtracted from, a vector of integers modulo 2^bits (Bonawitz et al. 2017, 4: the
// PRG of the self mask and of each pairwise mask).
//
// With bits <= 32 each coordinate takes 4 bytes of the stream, otherwise 8; the same seed, length
// and modulus give the same mask on every machine. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>

#include "crypto/x25519.h"

namespace tributary {

// v[i] = v[i] +- PRG(seed)[i] mod (mask + 1), for mask = 2^bits - 1.
void ApplyMask(std::span<uint64_t> v, const Key32& seed, bool subtract, uint64_t mask);

}  // namespace tributary
