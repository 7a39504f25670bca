// An LSTM cell's arithmetic (Hochreiter and Schmidhuber, 1997; the gates and their order as
// PyTorch's nn.LSTM: input i, forget f, cell g, output o), one definition for the CPU engine
// (train/cpu/lstm.cc) and the CUDA kernels (train/cuda/lstm.cu).
//
// For one sample and one unit at step t, from the pre-activations z = W_ih x_t + b_ih +
// W_hh h_{t-1} + b_hh of its four gates and the previous cell c_{t-1}:
//   i = sigmoid(z_i), f = sigmoid(z_f), g = tanh(z_g), o = sigmoid(z_o),
//   c_t = f c_{t-1} + i g,  h_t = o tanh(c_t).
// The sigmoids and tanhs are train/activation_math.h's (double, rounded once). The backward takes
// the gradient reaching h_t (from the output and from step t+1) and c_t (from step t+1) and gives
// the gradients of the four pre-activations and of c_{t-1}.
#pragma once

#include <cstdint>

#include "train/activation_math.h"
#include "train/recurrent_params.h"

namespace tributary {

struct LstmGates {
  float i, f, g, o;
};

// The gates of one unit from its pre-activations.
TRIB_HOST_DEVICE inline LstmGates LstmGatesOf(float zi, float zf, float zg, float zo) {
  return {ActivationForward(ActivationFn::kSigmoid, zi),
          ActivationForward(ActivationFn::kSigmoid, zf), ActivationForward(ActivationFn::kTanh, zg),
          ActivationForward(ActivationFn::kSigmoid, zo)};
}

TRIB_HOST_DEVICE inline float LstmCellOf(const LstmGates& a, float c_prev) {
  return a.f * c_prev + a.i * a.g;
}

TRIB_HOST_DEVICE inline float LstmHiddenOf(const LstmGates& a, float c) {
  return a.o * ActivationForward(ActivationFn::kTanh, c);
}

// The backward of one unit at one step: `dh` and `dc_next` the gradients reaching h_t and c_t from
// later; writes the pre-activations' gradients to dz[0..3] (i, f, g, o) and returns c_{t-1}'s.
TRIB_HOST_DEVICE inline float LstmCellBackward(const LstmGates& a, float c_prev, float c, float dh,
                                               float dc_next, float* dz) {
  const float tc = ActivationForward(ActivationFn::kTanh, c);
  const float dc = dc_next + dh * a.o * (1.0f - tc * tc);
  dz[0] = dc * a.g * (a.i * (1.0f - a.i));
  dz[1] = dc * c_prev * (a.f * (1.0f - a.f));
  dz[2] = dc * a.i * (1.0f - a.g * a.g);
  dz[3] = dh * tc * (a.o * (1.0f - a.o));
  return dc * a.f;
}

}  // namespace tributary
