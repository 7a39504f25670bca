// GaussianNoise: normally distributed noise for differential privacy, from a ChaCha20 keystream
// (crypto/chacha20_stream.h) keyed with 32 bytes of OpenSSL's generator, or, for reproducible
// experiments and tests, with a key derived from a seed.
//
// Each standard normal comes from two 53-bit uniforms by the Box-Muller transform. Mironov (CCS
// 2012) showed that textbook floating-point Laplace samplers leak through the gaps of the float
// grid; the same caveat applies here to the low bits of the noise, which docs/privacy.md states.
//
// Not thread-safe; one object per stream.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "crypto/chacha20_stream.h"
#include "tributary/result.h"

namespace tributary {

class GaussianNoise {
 public:
  // Keyed from OpenSSL's generator; Internal when it cannot deliver.
  static Result<GaussianNoise> FromSecureRandom();
  // Keyed from `seed` and `stream` (e.g. a round): the same numbers on every machine.
  static GaussianNoise FromSeed(uint64_t seed, uint64_t stream);

  // One draw from N(0, 1).
  double Next();
  // out[i] += stddev * N(0, 1), each draw independent.
  void AddTo(std::span<float> out, double stddev);

 private:
  explicit GaussianNoise(const std::array<uint8_t, 32>& key);
  double Uniform();  // in (0, 1): never 0, so log() is finite
  void Refill();

  std::unique_ptr<ChaCha20Stream> stream_;
  std::array<uint64_t, 256> buffer_{};
  size_t next_ = buffer_.size();
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace tributary
