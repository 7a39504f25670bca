// A GRU cell's arithmetic (Cho et al., 2014; the gates, their order and the reset gate's place as
// PyTorch's nn.GRU: reset r, update z, new n), one definition for the CPU engine (train/cpu/gru.cc)
// and the CUDA kernels (train/cuda/gru.cu).
//
// For one sample and one unit at step t, from the input's projections a_x = W_ih x_t + b_ih and the
// hidden state's a_h = W_hh h_{t-1} + b_hh (each three values: r, z, n) and h_{t-1}:
//   r = sigmoid(a_x.r + a_h.r), z = sigmoid(a_x.z + a_h.z), n = tanh(a_x.n + r a_h.n),
//   h_t = (1 - z) n + z h_{t-1}.
// The sigmoids and tanh are train/activation_math.h's (double, rounded once). The backward takes
// the gradient reaching h_t and gives the gradients of a_x's and a_h's three values and the part
// of h_{t-1}'s that does not go through W_hh.
#pragma once

#include <cstdint>

#include "train/activation_math.h"
#include "train/recurrent_params.h"

namespace tributary {

struct GruGates {
  float r, z, n;
};

TRIB_HOST_DEVICE inline GruGates GruGatesOf(float xr, float xz, float xn, float hr, float hz,
                                            float hn) {
  const float r = ActivationForward(ActivationFn::kSigmoid, xr + hr);
  return {r, ActivationForward(ActivationFn::kSigmoid, xz + hz),
          ActivationForward(ActivationFn::kTanh, xn + r * hn)};
}

TRIB_HOST_DEVICE inline float GruHiddenOf(const GruGates& g, float h_prev) {
  return (1.0f - g.z) * g.n + g.z * h_prev;
}

// `hn` the unit's a_h.n, `dh` the gradient reaching h_t: writes a_x's gradients to dx[0..2] and
// a_h's to dh3[0..2] (r, z, n), and returns the gradient h_{t-1} gets directly (z dh).
TRIB_HOST_DEVICE inline float GruCellBackward(const GruGates& g, float hn, float h_prev, float dh,
                                              float* dx, float* dh3) {
  const float da_n = dh * (1.0f - g.z) * (1.0f - g.n * g.n);
  const float da_r = da_n * hn * (g.r * (1.0f - g.r));
  const float da_z = dh * (h_prev - g.n) * (g.z * (1.0f - g.z));
  dx[0] = dh3[0] = da_r;
  dx[1] = dh3[1] = da_z;
  dx[2] = da_n;
  dh3[2] = da_n * g.r;
  return dh * g.z;
}

}  // namespace tributary
