#include "privacy/dp/gaussian_noise.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "core/rng.h"
#include "crypto/secure_random.h"

namespace tributary {

GaussianNoise::GaussianNoise(const std::array<uint8_t, 32>& key)
    : stream_(std::make_unique<ChaCha20Stream>(key)) {}

Result<GaussianNoise> GaussianNoise::FromSecureRandom() {
  std::array<uint8_t, 32> key{};
  TRIB_RETURN_IF_ERROR(SecureRandomBytes(key));
  return GaussianNoise(key);
}

GaussianNoise GaussianNoise::FromSeed(uint64_t seed, uint64_t stream) {
  std::array<uint8_t, 32> key{};
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t word = DeriveSeed(seed, {0xd9, stream, i});
    std::memcpy(key.data() + 8 * i, &word, 8);
  }
  return GaussianNoise(key);
}

void GaussianNoise::Refill() {
  stream_->Fill(std::span<uint8_t>(reinterpret_cast<uint8_t*>(buffer_.data()),
                                   buffer_.size() * sizeof(uint64_t)));
  next_ = 0;
}

double GaussianNoise::Uniform() {
  if (next_ == buffer_.size()) Refill();
  // 53 random bits, offset by half a step: uniform on (0, 1).
  return (static_cast<double>(buffer_[next_++] >> 11) + 0.5) * 0x1.0p-53;
}

double GaussianNoise::Next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double r = std::sqrt(-2.0 * std::log(Uniform()));
  const double theta = 2.0 * std::numbers::pi * Uniform();
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

void GaussianNoise::AddTo(std::span<float> out, double stddev) {
  for (float& v : out) v = static_cast<float>(v + stddev * Next());
}

}  // namespace tributary
