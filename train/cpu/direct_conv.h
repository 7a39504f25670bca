// Direct convolution kernels for narrow layers: Conv2D's forward pass and filter gradient computed
// straight from the (zero-padded) NHWC input, with no im2col matrix.
//
// For layers with few channels (LeNet's 1 -> 6 and 6 -> 16) im2col costs more than the product
// itself: each input value is copied kh * kw times, and the GEMM then packs those copies once more,
// while its 6- or 16-wide side cannot fill the GEMM kernel's register tile. These kernels hold a
// block of output pixels (or of filter taps) times the output channels in vector registers and
// read the input where it lies: the output channels lie along the vector lanes, padded with zeros
// to a multiple of DirectConvLanes() in the packed layouts below.
//
// A single-channel input (a grayscale image's first layer) instead puts a row's output pixels
// along the lanes.
//
// Summation order: an output is summed over the taps in OHWI order, (ky, kx, ic), then the bias is
// added; a filter-gradient entry is summed over the samples and pixels in order, (s, oy, ox)
// (single-channel layers: below). The order does not depend on how pixels or taps are blocked, so
// the results depend only on the instruction-set path (as Gemm's, gemm.h: one set of kernels per
// path, chosen with Gemm's) and on the inputs. Thread-safe: no state.
#pragma once

#include <cstdint>

namespace tributary::cpu {

struct DirectConvShape {
  int64_t h = 1, w = 1, c = 1;  // input
  int64_t kh = 1, kw = 1;       // kernel
  int64_t ph = 0, pw = 0;       // zero padding, each side
  int64_t oc = 1;               // output channels
  int64_t oh() const { return h + 2 * ph - kh + 1; }
  int64_t ow() const { return w + 2 * pw - kw + 1; }
  int64_t taps() const { return kh * kw * c; }
  int64_t padded_h() const { return h + 2 * ph; }
  int64_t padded_w() const { return w + 2 * pw; }
};

// Floats per vector on this process's path; packed rows are oc rounded up to a multiple of it.
int64_t DirectConvLanes();
int64_t DirectConvPaddedChannels(int64_t oc);

// OHWI weights [oc][taps] -> packed [taps][ocp] (ocp = DirectConvPaddedChannels(oc), zero lanes).
void PackDirectConvWeights(const DirectConvShape& g, const float* wt, float* packed);
// packed [taps][ocp] -> OHWI [oc][taps].
void UnpackDirectConvWeights(const DirectConvShape& g, const float* packed, float* wt);

// The kernels read the input zero-padded: n samples of padded_h() x padded_w() x c. Unless
// DirectConvCopiesInput, that is the input itself; otherwise PadDirectConvInput writes it to
// `padded`, DirectConvPaddedFloats(g, n) floats (with zeros after it: single-channel layers' tiles
// read whole vectors past a sample's last pixel).
bool DirectConvCopiesInput(const DirectConvShape& g);
int64_t DirectConvPaddedFloats(const DirectConvShape& g, int64_t n);
void PadDirectConvInput(const DirectConvShape& g, const float* in, int64_t n, float* padded);

// out[s][oy][ox][o] = bias[o] + sum over taps of x * w, for n samples of padded input `x`.
void DirectConvForward(const DirectConvShape& g, const float* x, int64_t n, const float* packed,
                       const float* bias, float* out);

// grad[tap][ocp] += sum over the n samples' output pixels of dy[pixel][o] * x(pixel, tap), with
// `x` the padded input and `dy` [n * oh * ow][oc]. `scratch` holds DirectConvScratchFloats(g)
// floats (a copy of the last sample's dy, so that no read goes past the end of `dy`, or for a
// single-channel layer dy transposed and the lane sums). The padding lanes of `grad` receive
// values that mean nothing. A single-channel layer's sums are taken lane by lane over the pixels
// and then across the lanes, so its order is (lane, s, oy, ox) rather than (s, oy, ox).
int64_t DirectConvScratchFloats(const DirectConvShape& g);
void DirectConvFilterGrad(const DirectConvShape& g, const float* x, int64_t n, const float* dy,
                          float* grad, float* scratch);

}  // namespace tributary::cpu
