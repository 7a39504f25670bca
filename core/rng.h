// Seeded, platform-independent random numbers.
//
// Rng is xoshiro256** seeded through splitmix64. Results depend only on the seed, never on the
// standard library (std:: distributions are implementation-defined, so we do not use them).
// Independent streams are derived from a base seed and a path of ids, e.g. per client and per
// round:
//   Rng rng = Rng::Stream(run_seed, {kStreamTraining, client_id, round});
// Not thread-safe: give each thread its own stream.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>

namespace tributary {

// Mixes `seed` with each id in `path` (splitmix64 finalizer); distinct paths give unrelated seeds.
uint64_t DeriveSeed(uint64_t seed, std::initializer_list<uint64_t> path);

class Rng {
 public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed = 0);
  static Rng Stream(uint64_t seed, std::initializer_list<uint64_t> path) {
    return Rng(DeriveSeed(seed, path));
  }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() { return Next(); }
  uint64_t Next();

  // Uniform in [0, 1) with 53 (double) or 24 (float) random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  float UniformFloat() { return static_cast<float>(Next() >> 40) * 0x1.0p-24f; }
  // Uniform integer in [0, n); n must be > 0. Unbiased (Lemire's method).
  uint64_t UniformInt(uint64_t n);
  // Standard normal (Box-Muller).
  double Normal();
  // Gamma(shape, 1) for shape > 0 (Marsaglia-Tsang).
  double Gamma(double shape);

  // Fisher-Yates shuffle.
  template <typename T>
  void Shuffle(std::span<T> items) {
    for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[UniformInt(i)]);
  }

  // The full generator state, for checkpoints.
  struct State {
    uint64_t s[4];
  };
  State state() const { return {{s_[0], s_[1], s_[2], s_[3]}}; }
  void set_state(const State& st) {
    for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
  }

 private:
  uint64_t s_[4];
};

}  // namespace tributary
