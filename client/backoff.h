// Backoff: the delays between reconnect attempts (exponential, capped, with seeded jitter).
//
// The n-th consecutive failure (n = 0, 1, ...) gives d = min(max_delay, initial_delay *
// multiplier^n), reduced by up to `jitter` of itself: the delay is uniform in
// [d * (1 - jitter), d]. Reset() after a successful connection starts again at initial_delay.
// Deterministic for a BackoffOptions::seed other than 0; with seed 0 (the default) each Backoff
// draws its own seed from the operating system's randomness, so clients that share their options
// do not retry in lockstep. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/rng.h"
#include "tributary/client.h"

namespace tributary {

class Backoff {
 public:
  // `options` must have passed Validate().
  explicit Backoff(const BackoffOptions& options);

  // The delay before the next attempt; counts one more failure.
  std::chrono::milliseconds NextDelay();
  // Consecutive failures since construction or the last Reset().
  int64_t failures() const { return failures_; }
  // True when options.max_attempts > 0 and that many consecutive failures happened.
  bool exhausted() const;
  void Reset() { failures_ = 0; }
  // Uniform in [0, n), n > 0, from the same seeded stream as the delays' jitter (which endpoint a
  // client fails over to: ClientRuntimeOptions::address).
  uint64_t Pick(uint64_t n) { return rng_.Next() % n; }

 private:
  BackoffOptions options_;
  Rng rng_;
  int64_t failures_ = 0;
};

}  // namespace tributary
