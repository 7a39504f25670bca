// The direct convolution kernels (train/cpu/direct_conv.h) against a convolution summed in double,
// over shapes that reach every tile size, the channel padding, the single-channel pixel tiles and
// the reads past a sample's end; and Conv2D's choice between them and im2col.
#include "train/cpu/direct_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/train/random_values.h"
#include "train/cpu/conv2d.h"
#include "train/cpu/gemm.h"

namespace tributary::cpu {
namespace {

std::string Name(const DirectConvShape& g, int64_t n) {
  return std::to_string(g.h) + "x" + std::to_string(g.w) + "x" + std::to_string(g.c) + " k" +
         std::to_string(g.kh) + "x" + std::to_string(g.kw) + " p" + std::to_string(g.ph) + "," +
         std::to_string(g.pw) + " oc" + std::to_string(g.oc) + " n" + std::to_string(n);
}

// Input value of sample s at padded position (y, x), zero in the padding.
float At(const DirectConvShape& g, const std::vector<float>& in, int64_t s, int64_t y, int64_t x,
         int64_t c) {
  const int64_t iy = y - g.ph, ix = x - g.pw;
  if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0f;
  return in[static_cast<size_t>(((s * g.h + iy) * g.w + ix) * g.c + c)];
}

// Runs both kernels on exactly sized buffers (so that a read past one is a sanitizer error) and
// compares them with sums in double.
void Check(const DirectConvShape& g, int64_t n) {
  SCOPED_TRACE(Name(g, n));
  const int64_t taps = g.taps(), oh = g.oh(), ow = g.ow(), ocp = DirectConvPaddedChannels(g.oc);
  ASSERT_EQ(ocp % DirectConvLanes(), 0);
  ASSERT_GE(ocp, g.oc);
  const std::vector<float> in = RandomValues(n * g.h * g.w * g.c, 1),
                           wt = RandomValues(g.oc * taps, 2), bias = RandomValues(g.oc, 3),
                           dy = RandomValues(n * oh * ow * g.oc, 4);
  std::vector<float> packed(static_cast<size_t>(taps * ocp)), padded;
  PackDirectConvWeights(g, wt.data(), packed.data());
  const float* x = in.data();
  if (DirectConvCopiesInput(g)) {
    padded.resize(static_cast<size_t>(DirectConvPaddedFloats(g, n)));
    PadDirectConvInput(g, in.data(), n, padded.data());
    x = padded.data();
  }
  std::vector<float> out(static_cast<size_t>(n * oh * ow * g.oc));
  DirectConvForward(g, x, n, packed.data(), bias.data(), out.data());

  std::vector<float> grad(packed.size(), 0.0f),
      scratch(static_cast<size_t>(DirectConvScratchFloats(g)));
  DirectConvFilterGrad(g, x, n, dy.data(), grad.data(), scratch.data());
  std::vector<float> dwt(wt.size());
  UnpackDirectConvWeights(g, grad.data(), dwt.data());

  std::vector<double> want_dw(wt.size(), 0.0);
  int bad = 0;
  for (int64_t s = 0; s < n; ++s)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t o = 0; o < g.oc; ++o) {
          double acc = bias[static_cast<size_t>(o)];
          const float d = dy[static_cast<size_t>(((s * oh + oy) * ow + ox) * g.oc + o)];
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx)
              for (int64_t c = 0; c < g.c; ++c) {
                const int64_t t = (ky * g.kw + kx) * g.c + c;
                const float xv = At(g, in, s, oy + ky, ox + kx, c);
                acc += static_cast<double>(wt[static_cast<size_t>(o * taps + t)]) * xv;
                want_dw[static_cast<size_t>(o * taps + t)] += static_cast<double>(d) * xv;
              }
          const float got = out[static_cast<size_t>(((s * oh + oy) * ow + ox) * g.oc + o)];
          if (std::abs(got - acc) > 1e-4 * (1.0 + std::abs(acc)) && ++bad <= 5)
            ADD_FAILURE() << "output (" << s << "," << oy << "," << ox << "," << o << "): " << got
                          << " against " << acc;
        }
  for (size_t i = 0; i < dwt.size(); ++i)
    if (std::abs(dwt[i] - want_dw[i]) > 1e-4 * (1.0 + std::abs(want_dw[i])) && ++bad <= 10)
      ADD_FAILURE() << "filter gradient " << i << ": " << dwt[i] << " against " << want_dw[i];
  EXPECT_EQ(bad, 0);
}

TEST(DirectConvTest, MatchesSumsInDoubleOnEveryTileShape) {
  // LeNet's two layers, then shapes for each tile path: single-channel rows shorter and longer than
  // a pixel tile, channel counts below, at and past a vector (and past two: a second pass), rows
  // that split into uneven tiles, kernels wider than the padding, and 1x1. Run under ASan (the
  // debug-asan preset) and with TRIBUTARY_SIMD=baseline as well: the buffers are exactly sized.
  const std::vector<DirectConvShape> shapes = {
      {28, 28, 1, 5, 5, 2, 2, 6},
      {14, 14, 6, 5, 5, 0, 0, 16},
      {7, 9, 1, 3, 3, 1, 1, 3},
      {5, 40, 1, 3, 5, 0, 2, 16},
      {6, 5, 3, 3, 3, 1, 1, 4},
      {9, 9, 2, 5, 5, 0, 0, 3},
      {8, 33, 2, 3, 3, 1, 1, 17},
      {6, 12, 4, 1, 1, 0, 0, 40},
      {10, 10, 1, 5, 5, 4, 4, 1},
      {5, 4, 2, 3, 3, 2, 2, 8},
      {4, 70, 3, 2, 4, 0, 1, 16},
      {3, 31, 1, 2, 7, 0, 3, 13},
      // Outputs smaller than a vector of channels: several samples' reads reach past dy's end.
      {3, 4, 2, 1, 1, 0, 0, 1},
      {1, 6, 2, 1, 1, 0, 0, 1},
      {1, 4, 3, 1, 1, 0, 0, 2},
  };
  for (const DirectConvShape& g : shapes)
    for (int64_t n : {1, 3, 4}) Check(g, n);
}

TEST(DirectConvTest, LanesFollowTheGemmPath) {
  // One process runs one path's copies: the lanes are that path's vector width.
  const std::string path = GemmPath();
  int64_t want = 4;  // baseline (SSE2) and aarch64 (NEON)
  if (path == "avx512") want = 16;
  if (path == "avx2+fma") want = 8;
#if defined(__AVX512F__)
  if (path == "native") want = 16;
#elif defined(__AVX__)
  if (path == "native") want = 8;
#endif
  EXPECT_EQ(DirectConvLanes(), want) << path;
  const char* forced = std::getenv("TRIBUTARY_SIMD");
  if (forced != nullptr && std::string(forced) == "baseline" && path != "native") {
    EXPECT_EQ(path, "baseline");
  }
#if defined(__x86_64__)
  if (forced != nullptr && std::string(forced) == "avx2" && path != "native" &&
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_EQ(path, "avx2+fma");
  }
#endif
}

TEST(DirectConvTest, FilterGradAccumulatesIntoTheGradient) {
  // FilterGrad adds to what `grad` holds: two halves of a batch sum to the whole batch (to
  // rounding: the halves' sums are added in another order).
  for (const DirectConvShape& g :
       {DirectConvShape{8, 8, 1, 3, 3, 1, 1, 6}, DirectConvShape{8, 8, 4, 3, 3, 0, 0, 16}}) {
    const int64_t n = 4, ocp = DirectConvPaddedChannels(g.oc), pix = g.oh() * g.ow();
    const std::vector<float> in = RandomValues(n * g.h * g.w * g.c, 5),
                             dy = RandomValues(n * pix * g.oc, 6);
    std::vector<float> padded(static_cast<size_t>(DirectConvPaddedFloats(g, n)));
    const float* x = in.data();
    if (DirectConvCopiesInput(g)) {
      PadDirectConvInput(g, in.data(), n, padded.data());
      x = padded.data();
    }
    const int64_t sample = g.padded_h() * g.padded_w() * g.c;
    std::vector<float> whole(static_cast<size_t>(g.taps() * ocp), 0.0f), halves(whole.size(), 0.0f),
        scratch(static_cast<size_t>(DirectConvScratchFloats(g)));
    DirectConvFilterGrad(g, x, n, dy.data(), whole.data(), scratch.data());
    DirectConvFilterGrad(g, x, 2, dy.data(), halves.data(), scratch.data());
    DirectConvFilterGrad(g, x + 2 * sample, 2, dy.data() + 2 * pix * g.oc, halves.data(),
                         scratch.data());
    for (int64_t t = 0; t < g.taps(); ++t)
      for (int64_t o = 0; o < g.oc; ++o) {
        const size_t i = static_cast<size_t>(t * ocp + o);
        EXPECT_NEAR(halves[i], whole[i], 1e-4 * (1.0 + std::abs(whole[i]))) << t << " " << o;
      }
  }
}

TEST(DirectConvTest, Conv2DTakesTheDirectKernelsForNarrowLayersOnly) {
  EXPECT_TRUE(Conv2D::UsesDirectKernels(ConvTaps{28, 28, 1, 5, 5, 2, 2}, 6));    // lenet 1
  EXPECT_TRUE(Conv2D::UsesDirectKernels(ConvTaps{14, 14, 6, 5, 5, 0, 0}, 16));   // lenet 2
  EXPECT_FALSE(Conv2D::UsesDirectKernels(ConvTaps{28, 28, 1, 5, 5, 2, 2}, 32));  // cnn 1
  EXPECT_FALSE(Conv2D::UsesDirectKernels(ConvTaps{28, 1, 28, 5, 1, 2, 0}, 16));  // a conv1d
  EXPECT_FALSE(Conv2D::UsesDirectKernels(ConvTaps{3, 3, 4, 1, 1, 0, 0}, 8));     // rows of 3

  // The layer gives the direct kernels' values (LeNet's first layer, against sums in double).
  const ConvTaps t{28, 28, 1, 5, 5, 2, 2};
  Conv2D conv(t, 6, 2);
  ASSERT_TRUE(conv.direct());
  std::vector<float> params = RandomValues(conv.num_params(), 7), grads(params.size());
  conv.Bind(params.data(), grads.data());
  const std::vector<float> x = RandomValues(2 * 28 * 28, 8);
  std::vector<float> y(2 * 28 * 28 * 6);
  conv.Forward(x.data(), y.data(), 2);
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t oy = 0; oy < 28; oy += 9)
      for (int64_t ox = 0; ox < 28; ox += 5)
        for (int64_t o = 0; o < 6; ++o) {
          double acc = params[static_cast<size_t>(6 * 25 + o)];
          for (int64_t ky = 0; ky < 5; ++ky)
            for (int64_t kx = 0; kx < 5; ++kx) {
              const int64_t iy = oy + ky - 2, ix = ox + kx - 2;
              if (iy < 0 || iy >= 28 || ix < 0 || ix >= 28) continue;
              acc += static_cast<double>(params[static_cast<size_t>(o * 25 + ky * 5 + kx)]) *
                     x[static_cast<size_t>((s * 28 + iy) * 28 + ix)];
            }
          EXPECT_NEAR(y[static_cast<size_t>(((s * 28 + oy) * 28 + ox) * 6 + o)], acc, 1e-4);
        }
}

}  // namespace
}  // namespace tributary::cpu
