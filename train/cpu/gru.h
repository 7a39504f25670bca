// GRU on the CPU engine (train/gru_math.h: PyTorch's nn.GRU, one layer, batch first, zero initial
// state). A sample is `steps` steps of `features` values; the output is the last step's hidden
// state (units values) or, with `sequences`, every step's (steps x units). With sequence lengths
// (BeginBatch), as the LSTM (train/cpu/lstm.h): padded steps keep the state and output zeros.
//
// Parameters, in order: weight_ih [3*units, features], weight_hh [3*units, units], bias_ih
// [3*units], bias_hh [3*units], the gates' rows in PyTorch's order (r, z, n). As the LSTM (lstm.h):
// the input's projection for every step is one GEMM, each step's recurrence one, and the backward
// runs through time.
#pragma once

#include "train/cpu/cpu_layer.h"
#include "train/gru_math.h"
#include "train/recurrent_params.h"

namespace tributary::cpu {

class Gru final : public CpuLayer {
 public:
  explicit Gru(const RecurrentShape& shape) : sh_(shape) {}
  int64_t num_params() const override { return RecurrentParams::Count(3 * sh_.units, sh_); }
  void Bind(float* params, float* grads) override {
    p_ = RecurrentParams::In(params, 3 * sh_.units, sh_);
    d_ = RecurrentParams::In(grads, 3 * sh_.units, sh_);
  }
  void BeginBatch(bool, uint64_t, int64_t, const int32_t* lengths) override { lengths_ = lengths; }
  void Forward(const float* in, float* out, int64_t n) override;
  void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                int64_t n) override;

 private:
  RecurrentShape sh_;
  RecurrentParams p_, d_;  // the parameters and their gradients
  // ax_, dax_, dah_all_: [n * steps, 3 units] sample-major; ah_ and gates_ [steps][n][3 units];
  // hidden_ [steps + 1][n][units] (step 0 the zero state); dah_ [n, 3 units]; dh_, direct_ [n,
  // units].
  AlignedVector ax_, dax_, dah_all_, ah_, gates_, hidden_, dah_, dh_, direct_;
  // Each sample's length (steps t >= length keep the state and output zeros), or null: all steps.
  const int32_t* lengths_ = nullptr;
};

}  // namespace tributary::cpu
