// The smooth activations' formulas (sigmoid, tanh, GELU) and their derivatives, one definition for
// the CPU engine (train/cpu/pointwise.cc) and the CUDA kernels (train/cuda/activations.cu).
//
// Each is computed in double and rounded to float once, so that the result does not depend on
// which libm variant (or which GPU) evaluated the transcendental: a double result lands within one
// double ulp of a float rounding boundary too rarely to matter. The derivatives follow PyTorch's
// backward formulas: sigmoid's and tanh's from the layer's output (s (1 - s), 1 - t^2), GELU's
// (the exact, erf form: x Phi(x)) from its input (Phi(x) + x phi(x)).
#pragma once

#include <cmath>

#if defined(__CUDACC__) || defined(TRIB_CUDA_HOST_EMULATION)
#define TRIB_HOST_DEVICE __host__ __device__
#else
#define TRIB_HOST_DEVICE
#endif

namespace tributary {

enum class ActivationFn { kSigmoid, kTanh, kGelu };

TRIB_HOST_DEVICE inline float ActivationForward(ActivationFn f, float x) {
  const double d = x;
  switch (f) {
    case ActivationFn::kSigmoid:
      return static_cast<float>(1.0 / (1.0 + ::exp(-d)));
    case ActivationFn::kTanh:
      return static_cast<float>(::tanh(d));
    case ActivationFn::kGelu:
      return static_cast<float>(0.5 * d * (1.0 + ::erf(d * 0.70710678118654752440)));
  }
  return x;
}

// d activation / d input at input x with output y.
TRIB_HOST_DEVICE inline float ActivationSlope(ActivationFn f, float x, float y) {
  switch (f) {
    case ActivationFn::kSigmoid:
      return y * (1.0f - y);
    case ActivationFn::kTanh:
      return 1.0f - y * y;
    case ActivationFn::kGelu: {
      const double d = x;
      const double cdf = 0.5 * (1.0 + ::erf(d * 0.70710678118654752440));
      const double pdf = 0.39894228040143267794 * ::exp(-0.5 * d * d);
      return static_cast<float>(cdf + d * pdf);
    }
  }
  return 1.0f;
}

}  // namespace tributary
