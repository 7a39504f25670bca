// Shamir secret sharing (Shamir 1979) over the prime field GF(2^61 - 1), for byte strings.
//
// A secret of up to 255 bytes is cut into 7-byte limbs; each limb is the constant term of its own
// random polynomial of degree threshold - 1, and a share holds every polynomial's value at the
// share's x (1..2^32-1; distinct per holder). Any `threshold` shares give the secret back; fewer
// reveal nothing about it (each limb is uniformly distributed given them).
//
//   std::vector<ShamirShare> shares = *ShamirSplit(secret, /*threshold=*/3, xs);
//   std::vector<uint8_t> back = *ShamirCombine(some_three, 3, secret.size());
//
// ShamirCombine interpolates from the first `threshold` shares and checks that every further
// share lies on the same polynomials: a changed share is detected when more than `threshold`
// arrive (Corruption), and cannot go unnoticed into a secret with a limb out of range.
// Coefficients come from OpenSSL's CSPRNG. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tributary/result.h"

namespace tributary {

inline constexpr uint64_t kShamirPrime = (uint64_t{1} << 61) - 1;
inline constexpr size_t kShamirLimbBytes = 7;
inline constexpr size_t kShamirMaxSecretBytes = 255;

struct ShamirShare {
  uint32_t x = 0;           // the holder's point, 1..2^32-1
  std::vector<uint64_t> y;  // one field element per limb of the secret
};

// Field arithmetic mod 2^61 - 1 (inputs < p).
uint64_t FieldAdd(uint64_t a, uint64_t b);
uint64_t FieldSub(uint64_t a, uint64_t b);
uint64_t FieldMul(uint64_t a, uint64_t b);
uint64_t FieldInverse(uint64_t a);  // a != 0

// Shares of `secret` (1..255 bytes) for the holders at `xs` (distinct, non-zero; at least
// `threshold` of them), any `threshold` of which (>= 1) recover it.
Result<std::vector<ShamirShare>> ShamirSplit(std::span<const uint8_t> secret, size_t threshold,
                                             std::span<const uint32_t> xs);

// The field elements (limbs) a share of a `secret_bytes`-byte secret holds.
constexpr size_t ShamirLimbs(size_t secret_bytes) {
  return (secret_bytes + kShamirLimbBytes - 1) / kShamirLimbBytes;
}

// InvalidArgument unless `share` can be one of a `secret_bytes`-byte secret's: a non-zero x and
// ShamirLimbs(secret_bytes) values, each below kShamirPrime (what ShamirCombine checks of each).
Status CheckShamirShare(const ShamirShare& share, size_t secret_bytes);

// The secret of `secret_bytes` bytes from at least `threshold` shares with distinct x.
// FailedPrecondition when there are too few, InvalidArgument when they are malformed, Corruption
// when they do not lie on one polynomial of degree threshold - 1.
Result<std::vector<uint8_t>> ShamirCombine(std::span<const ShamirShare> shares, size_t threshold,
                                           size_t secret_bytes);

}  // namespace tributary
