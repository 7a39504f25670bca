// LSTM on the CPU engine (train/lstm_math.h: PyTorch's nn.LSTM, one layer, batch first, zero
// initial state). A sample is `steps` steps of `features` values; the output is the last step's
// hidden state (units values) or, with `sequences`, every step's (steps x units). With sequence
// lengths (BeginBatch), a sample's steps from its length on leave its state as it was and output
// zeros, so its last output is the state at its length (PyTorch's pack_padded_sequence).
//
// Parameters, in order: weight_ih [4*units, features], weight_hh [4*units, units], bias_ih
// [4*units], bias_hh [4*units], the gates' rows in PyTorch's order (i, f, g, o). The input's
// projection for every step is one GEMM, each step's recurrence one GEMM; the backward runs through
// time (BPTT) with one GEMM per step and one for the input weights and gradient. Forward keeps each
// step's gates, cells and hidden states for Backward.
#pragma once

#include "train/cpu/cpu_layer.h"
#include "train/recurrent_params.h"

namespace tributary::cpu {

class Lstm final : public CpuLayer {
 public:
  explicit Lstm(const RecurrentShape& shape) : sh_(shape) {}
  int64_t num_params() const override { return RecurrentParams::Count(4 * sh_.units, sh_); }
  void Bind(float* params, float* grads) override {
    p_ = RecurrentParams::In(params, 4 * sh_.units, sh_);
    d_ = RecurrentParams::In(grads, 4 * sh_.units, sh_);
  }
  void BeginBatch(bool, uint64_t, int64_t, const int32_t* lengths) override { lengths_ = lengths; }
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  // Step t's rows (n samples) of a step-major buffer of `width` values per sample.
  float* At(AlignedVector& v, int64_t t, int64_t n, int64_t width) {
    return v.data() + t * n * width;
  }
  RecurrentShape sh_;
  RecurrentParams p_, d_;  // the parameters and their gradients
  // zx_, dz_all_: [n * steps, 4 units], sample-major; gates_ [steps][n][4 units]; cells_ and
  // hidden_ [steps + 1][n][units] (step 0 the zero state); z_ [n, 4 units]; dh_, dc_ [n, units].
  AlignedVector zx_, dz_all_, gates_, cells_, hidden_, z_, dh_, dc_;
  // Each sample's length (steps t >= length keep the state and output zeros), or null: all steps.
  const int32_t* lengths_ = nullptr;
  AlignedVector carry_;  // [n, units]: dh carried past a sample's padded steps
};

}  // namespace tributary::cpu
