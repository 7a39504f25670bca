// IntDomain: how secure aggregation turns a float update into integers that sum exactly, and the
// sum back into the weighted mean (Bonawitz et al. 2017, section 3; Bell et al. 2020, section 5).
//
// Each value x is clipped to [-clip, clip], stochastically rounded to a level in [0, L] with
// L = 2^quant_bits - 1 (unbiased: E[level] = (x + clip) / (2 clip) * L), and multiplied by the
// client's integer weight w (its num_examples, at most max_weight). The client's weight itself is
// appended as one more coordinate, so the server learns only the total weight. Every coordinate of
// the sum over at most max_clients clients is below max_clients * max_weight * L, so the sum is
// exact modulo 2^sum_bits with
//
//   sum_bits = ceil(log2(max_clients * max_weight * L + 1))        (at most 62)
//
// and Decode returns sum_i / W / L * 2 clip - clip with W the summed weight.
//
// Error: stochastic rounding adds, per client and value, an error of mean 0 and magnitude below
// one level, step = 2 clip / L; the weighted mean of such errors is below step in magnitude and
// shrinks like step / sqrt(clients) (it is a mean of independent errors). Values beyond the clip
// range are moved to it (a bias the clip range should make rare). Thread-safe (immutable).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tributary/result.h"

namespace tributary {

struct IntDomainConfig {
  float clip = 1.0f;              // values are clipped to [-clip, clip]
  int quant_bits = 16;            // levels per value: 2^quant_bits (1..24)
  uint64_t max_weight = 1 << 16;  // a client's weight (num_examples) is capped here
  uint64_t max_clients = 1000;    // the most clients whose inputs one sum may hold
  bool operator==(const IntDomainConfig&) const = default;
};

class IntDomain {
 public:
  // InvalidArgument naming the field when the configuration is out of range or needs more than
  // 62 bits.
  static Result<IntDomain> Create(const IntDomainConfig& config);

  const IntDomainConfig& config() const { return config_; }
  int sum_bits() const { return sum_bits_; }
  uint64_t modulus_mask() const { return mask_; }  // 2^sum_bits - 1
  uint64_t levels() const { return levels_; }      // L
  float step() const;                              // 2 clip / L

  // The client's weight, capped: min(num_examples, max_weight), at least 1.
  uint64_t Weight(uint64_t num_examples) const;
  // x.size() + 1 integers: the weighted levels of x, then the weight. `seed` drives the
  // stochastic rounding (the client's own randomness; it never leaves the client).
  std::vector<uint64_t> Encode(std::span<const float> x, uint64_t weight, uint64_t seed) const;
  // The weighted mean from the sum of Encode outputs (sum.size() - 1 values); FailedPrecondition
  // when the summed weight is zero or larger than the domain allows (the sum was not of inputs).
  Result<std::vector<float>> Decode(std::span<const uint64_t> sum) const;

 private:
  IntDomain(const IntDomainConfig& c, int bits);
  IntDomainConfig config_;
  int sum_bits_;
  uint64_t mask_, levels_;
};

}  // namespace tributary
