#include "client/backoff.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <random>
#include <string>

namespace tributary {

Status BackoffOptions::Validate() const {
  // 0 would stay 0 at every multiplier: a refused connection retried in a tight loop.
  if (initial_delay.count() < 1)
    return Status::InvalidArgument("backoff.initial_delay must be >= 1 ms, got " +
                                   std::to_string(initial_delay.count()));
  if (max_delay < initial_delay)
    return Status::InvalidArgument("backoff.max_delay (" + std::to_string(max_delay.count()) +
                                   " ms) must be >= backoff.initial_delay (" +
                                   std::to_string(initial_delay.count()) + " ms)");
  if (!(multiplier >= 1.0) || !std::isfinite(multiplier))
    return Status::InvalidArgument("backoff.multiplier must be a finite number >= 1, got " +
                                   std::to_string(multiplier));
  if (!(jitter >= 0.0 && jitter <= 1.0))
    return Status::InvalidArgument("backoff.jitter must be in [0, 1], got " +
                                   std::to_string(jitter));
  if (max_attempts < 0)
    return Status::InvalidArgument("backoff.max_attempts must be >= 0 (0 = retry forever), got " +
                                   std::to_string(max_attempts));
  return Status::Ok();
}

namespace {

// A seed from the operating system's randomness (getrandom on Linux), so that every client draws
// its own jitter; the clock and this object's address when there is none to be had.
uint64_t DrawSeed(const void* salt) {
  uint64_t seed = 0;
  try {
    std::random_device device;
    seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  } catch (const std::exception&) {
    seed = 0;
  }
  const auto now =
      static_cast<uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  seed = DeriveSeed(seed, {now, reinterpret_cast<uintptr_t>(salt)});
  return seed == 0 ? 1 : seed;
}

}  // namespace

Backoff::Backoff(const BackoffOptions& options)
    : options_(options), rng_(options.seed != 0 ? options.seed : DrawSeed(this)) {}

std::chrono::milliseconds Backoff::NextDelay() {
  // Computed in double and capped before converting, so a long run of failures cannot overflow.
  const double cap = static_cast<double>(options_.max_delay.count());
  const double grown = static_cast<double>(options_.initial_delay.count()) *
                       std::pow(options_.multiplier, static_cast<double>(failures_));
  const double d = std::min(cap, grown);
  const double jittered = d * (1.0 - options_.jitter * rng_.Uniform());
  ++failures_;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(jittered)));
}

bool Backoff::exhausted() const {
  return options_.max_attempts > 0 && failures_ >= options_.max_attempts;
}

}  // namespace tributary
