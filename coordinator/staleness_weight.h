// StalenessWeight: how much an asynchronous update counts, by how stale it is
// (run.staleness_weight).
//
// An update computed against model version v that arrives when the model is at version w has
// staleness t = w - v. Its delta is multiplied by s(t) before it is folded; the normaliser stays
// the plain sum of the weights (num_examples), so the step is sum(s(t_i) * n_i * delta_i) /
// sum(n_i), as FedBuff (Nguyen et al., AISTATS 2022, section 3) defines it: a discount that the
// weighted mean does not cancel out again. The published choices:
//   "constant"          s(t) = 1
//   "sqrt"              s(t) = 1 / sqrt(1 + t)               (FedBuff's choice)
//   "polynomial:A"      s(t) = (1 + t)^-A, A in [0, 10]       (FedAsync, Xie et al. 2019)
//   "hinge:A:B"         s(t) = 1 for t <= B, else 1 / (A (t - B) + 1), A in (0, 10], B >= 0
//                                                             (FedAsync's hinge)
// Every s(t) is in (0, 1] and computed in double, then rounded to the float the codec's decoder
// scales by: the same bits on every machine for the same t.
//
// A value type; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tributary/result.h"

namespace tributary {

class StalenessWeight {
 public:
  // InvalidArgument naming run.staleness_weight and the choices for anything else.
  static Result<StalenessWeight> Parse(std::string_view spec);

  float operator()(uint64_t staleness) const;
  const std::string& spec() const { return spec_; }

 private:
  enum class Kind { kConstant, kPolynomial, kHinge };
  std::string spec_;
  Kind kind_ = Kind::kConstant;
  double a_ = 0.0, b_ = 0.0;
};

}  // namespace tributary
