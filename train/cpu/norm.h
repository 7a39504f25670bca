// GroupNorm and LayerNorm on the CPU (train/norm_math.h has the arithmetic and the sets). Its
// parameters are gamma [c] then beta [c]; Forward keeps each (sample, set)'s mean and 1/std for
// the Backward of the same batch.
#pragma once

#include <vector>

#include "train/cpu/cpu_layer.h"
#include "train/norm_math.h"

namespace tributary::cpu {

class Norm final : public CpuLayer {
 public:
  Norm(const NormGeometry& g, int64_t max_batch)
      : g_(g),
        mean_(static_cast<size_t>(max_batch * g.sets())),
        rstd_(static_cast<size_t>(max_batch * g.sets())) {}
  int64_t num_params() const override { return 2 * g_.c; }
  void Bind(float* params, float* grads) override;
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  NormGeometry g_;
  std::vector<float> mean_, rstd_;  // [max_batch * sets]
  float *gamma_ = nullptr, *beta_ = nullptr, *dgamma_ = nullptr, *dbeta_ = nullptr;
};

}  // namespace tributary::cpu
