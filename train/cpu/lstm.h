// LSTM on the CPU engine (train/lstm_math.h: PyTorch's nn.LSTM, one layer, batch first, zero
// initial state). A sample is `steps` steps of `features` values; the output is the last step's
// hidden state (units values) or, with `sequences`, every step's (steps x units).
//
// Parameters, in order: weight_ih [4*units, features], weight_hh [4*units, units], bias_ih
// [4*units], bias_hh [4*units], the gates' rows in PyTorch's order (i, f, g, o). The input's
// projection for every step is one GEMM, each step's recurrence one GEMM; the backward runs through
// time (BPTT) with one GEMM per step and one for the input weights and gradient. Forward keeps each
// step's gates, cells and hidden states for Backward.
#pragma once

#include "train/cpu/cpu_layer.h"

namespace tributary::cpu {

class Lstm final : public CpuLayer {
 public:
  Lstm(int64_t steps, int64_t features, int64_t units, bool sequences)
      : steps_(steps), features_(features), units_(units), sequences_(sequences) {}
  int64_t num_params() const override { return 4 * units_ * (features_ + units_) + 8 * units_; }
  void Bind(float* params, float* grads) override;
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  // Step t's rows (n samples) of a step-major buffer of `width` values per sample.
  float* At(AlignedVector& v, int64_t t, int64_t n, int64_t width) {
    return v.data() + t * n * width;
  }
  int64_t steps_, features_, units_;
  bool sequences_;
  float *w_ih_ = nullptr, *w_hh_ = nullptr, *b_ih_ = nullptr, *b_hh_ = nullptr;
  float *dw_ih_ = nullptr, *dw_hh_ = nullptr, *db_ih_ = nullptr, *db_hh_ = nullptr;
  // zx_, dz_all_: [n * steps, 4 units], sample-major; gates_ [steps][n][4 units]; cells_ and
  // hidden_ [steps + 1][n][units] (step 0 the zero state); z_ [n, 4 units]; dh_, dc_ [n, units].
  AlignedVector zx_, dz_all_, gates_, cells_, hidden_, z_, dh_, dc_;
};

}  // namespace tributary::cpu
