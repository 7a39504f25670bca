// Winograd's minimal filtering F(m, r) for Conv1D's stride-1 "same" convolutions (kernel 3 or 5,
// padding (r - 1) / 2): Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"
// (CVPR 2016), in one dimension. Each tile of m = 4 outputs is computed from a = m + r - 1 inputs
// with a multiplications per (input channel, output channel) pair instead of m * r, so the
// products, a GEMMs of [tiles x C] x [C x K], do a / (m r) of im2col's work (0.4 for r = 5, 0.5
// for r = 3); the transforms around them are a few additions per value.
//
//   forward:        M_xi = V_xi U_xi,   V = B^T x-tile,  U = G w,   y-tile = A^T M (+ bias)
//   input gradient: the same on dy with the kernel reversed (a "same" convolution's transpose)
//   filter gradient: D_xi = Z_xi^T V_xi summed over tiles, Z = A dy-tile,  dw = G^T D
//
// The matrices come from the points 0, +-1, +-2, +-1/2 and infinity (Toom-Cook: G and A^T are
// Vandermonde matrices of the points, B^T the transposed inverse of the a x a one), computed at
// compile time in double and rounded once (winograd_kernel.inc), so that the transforms'
// coefficients are constants: zeros cost nothing, ones are additions. Float results differ from a
// direct sum by a few ulps of the largest term (WinogradTest bounds them against sums in double).
//
// Layouts: activations [n][steps][channels]; a transformed tensor is `a` planes, plane xi holding
// [n * tiles][channels] with tile t of sample s at row s * tiles + t (tiles = ceil(steps / m)).
// The kernels are built once per instruction-set path and follow Gemm's choice (gemm.h), like
// direct_conv.h: the bits depend on the path and the inputs only. Thread-safe: no state.
#pragma once

#include <cstdint>
#include <vector>

namespace tributary::cpu {

struct WinogradMatrices {
  int m = 4, r = 3, a = 6;
  std::vector<float> bt;  // a x a, the input transform
  std::vector<float> g;   // a x r, the filter transform
  std::vector<float> at;  // m x a, the output transform
};

// F(4, r) for r = 3 or 5 (built on first use); other kernels have none.
bool WinogradSupports(int64_t r);
const WinogradMatrices& WinogradFor(int64_t r);

inline int64_t WinogradTiles(const WinogradMatrices& w, int64_t steps) {
  return (steps + w.m - 1) / w.m;
}

// v = B^T x-tiles: tile t of sample s reads input steps t*m - pad .. t*m - pad + a - 1 (zeros
// outside [0, steps)); `tiles` tiles a sample. x is [n][steps][c], v is a planes of
// [n * tiles][c].
void WinogradInput(const WinogradMatrices& w, const float* x, int64_t n, int64_t steps, int64_t c,
                   int64_t pad, int64_t tiles, float* v);

// y = A^T M (+ bias): M is a planes of [n * tiles][k], y is [n][steps][k]; a tile's outputs past
// `steps` are not written. bias may be null.
void WinogradOutput(const WinogradMatrices& w, const float* m, int64_t n, int64_t steps, int64_t k,
                    int64_t tiles, const float* bias, float* y);

// z = A dy-tiles (the filter gradient's transform of the output gradient): dy is [n][steps][k],
// steps past `steps` counting as zero; z is a planes of [n * tiles][k].
void WinogradGradOutput(const WinogradMatrices& w, const float* dy, int64_t n, int64_t steps,
                        int64_t k, int64_t tiles, float* z);

// u = G w: w is the [oc][r][c] filter (OHWI, taps in reverse order when `reversed`, for the input
// gradient), u is a planes of [oc][c].
void WinogradWeights(const WinogradMatrices& w, const float* wt, int64_t oc, int64_t c,
                     bool reversed, float* u);

// dw = G^T d: d is a planes of [oc][c] (the products' gradients summed over the tiles), dw the
// [oc][r][c] filter gradient.
void WinogradFilterGrad(const WinogradMatrices& w, const float* d, int64_t oc, int64_t c,
                        float* dw);

}  // namespace tributary::cpu
