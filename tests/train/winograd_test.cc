// Conv1D's Winograd path (train/cpu/winograd.h through Conv2D): the forward pass, the filter, bias
// and input gradients against sums in double, over kernels of 3 and 5 taps, step counts that do
// and do not fill the last tile of 4, channel counts that do and do not fill a vector, several
// samples and chunks; the transform matrices' defining property; and which layers take the path.
#include "train/cpu/winograd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/train/random_values.h"
#include "train/cpu/conv2d.h"

namespace tributary::cpu {
namespace {
namespace wino {  // the test's helpers, apart from its unity-build neighbours'

struct Case {
  int64_t steps, c, oc, r, n;
  int64_t max_batch = 0;  // the layer's (0: n)
};

// Largest |got - want| over the largest |want|.
double RelativeError(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

void Check(const Case& k) {
  SCOPED_TRACE("steps " + std::to_string(k.steps) + " c " + std::to_string(k.c) + " oc " +
               std::to_string(k.oc) + " r " + std::to_string(k.r) + " n " + std::to_string(k.n));
  const ConvTaps g{k.steps, 1, k.c, k.r, 1, (k.r - 1) / 2, 0};
  ASSERT_TRUE(Conv2D::UsesWinograd(g));
  Conv2D layer(g, k.oc, k.max_batch > 0 ? k.max_batch : k.n);
  ASSERT_TRUE(layer.winograd());
  std::vector<float> params = RandomValues(layer.num_params(), 1), grads(params.size());
  layer.Bind(params.data(), grads.data());
  const std::vector<float> x = RandomValues(k.n * k.steps * k.c, 2),
                           dy = RandomValues(k.n * k.steps * k.oc, 3);
  std::vector<float> y(dy.size()), dx(x.size());
  layer.Forward(x.data(), y.data(), k.n);
  layer.Backward(x.data(), y.data(), dy.data(), dx.data(), k.n);

  const int64_t taps = k.r * k.c, pad = (k.r - 1) / 2;
  auto w = [&](int64_t o, int64_t j, int64_t i) { return params[(o * taps + j * k.c + i)]; };
  std::vector<double> want_y(y.size()), want_dw(taps * k.oc, 0.0), want_db(k.oc, 0.0),
      want_dx(x.size(), 0.0);
  for (int64_t s = 0; s < k.n; ++s)
    for (int64_t t = 0; t < k.steps; ++t)
      for (int64_t o = 0; o < k.oc; ++o) {
        const size_t at = static_cast<size_t>((s * k.steps + t) * k.oc + o);
        double acc = params[static_cast<size_t>(k.oc * taps + o)];
        const double d = dy[at];
        want_db[static_cast<size_t>(o)] += d;
        for (int64_t j = 0; j < k.r; ++j) {
          const int64_t u = t + j - pad;
          if (u < 0 || u >= k.steps) continue;
          for (int64_t i = 0; i < k.c; ++i) {
            const size_t xi = static_cast<size_t>((s * k.steps + u) * k.c + i);
            acc += static_cast<double>(w(o, j, i)) * x[xi];
            want_dw[static_cast<size_t>(o * taps + j * k.c + i)] += d * x[xi];
            want_dx[xi] += d * w(o, j, i);
          }
        }
        want_y[at] = acc;
      }
  const std::vector<float> dw(grads.begin(), grads.begin() + taps * k.oc),
      db(grads.begin() + taps * k.oc, grads.end());
  // F(4, 5)'s transforms hold coefficients up to 21/4 and 1/16: a few float ulps of the largest
  // term, far below what a wrong tap or tile would give (about 1).
  EXPECT_LT(RelativeError(y, want_y), 2e-6);
  EXPECT_LT(RelativeError(dw, want_dw), 2e-6);
  EXPECT_LT(RelativeError(db, want_db), 1e-6);
  EXPECT_LT(RelativeError(dx, want_dx), 2e-6);
}

}  // namespace wino

using wino::Case;
using wino::Check;

TEST(WinogradTest, TheLayerMatchesSumsInDouble) {
  const Case cases[] = {
      {28, 28, 32, 5, 3},  // conv1d_recognizer's first layer: a partial vector of channels
      {28, 64, 64, 3, 2},  // and its last
      {13, 5, 7, 3, 4},    // a last tile of one step; channels under one vector
      {9, 20, 17, 5, 3},   // a last tile of one step with 5 taps: both sides padded
      {3, 3, 2, 3, 2},     // one tile, shorter than its 4 outputs
      {2, 1, 1, 5, 1},     // padding wider than the sequence
      {6, 33, 18, 5, 5},   // a tile of two: channels one past two AVX-512 vectors
  };
  for (const Case& c : cases) Check(c);
}

// Many samples: the layer works in chunks of samples (a chunk's transformed tensors in about
// 768 KiB), keeps every chunk's transformed input from Forward for the filter gradient, which sums
// over all of them; a batch larger than the layer was built for grows its buffers.
TEST(WinogradTest, ChunksOfSamplesGiveTheWholeBatchsGradients) {
  Check({28, 64, 64, 5, 150});
  Check({28, 64, 64, 3, 70, 4});
}

// y = A^T [(G g) . (B^T d)] is the correlation sum_j d_{i+j} g_j exactly (in double this holds to
// rounding; the float matrices are those rounded once).
TEST(WinogradTest, TheMatricesComputeTheCorrelation) {
  for (int64_t r : {3, 5}) {
    const WinogradMatrices& w = WinogradFor(r);
    ASSERT_EQ(w.a, w.m + r - 1);
    const std::vector<float> d = RandomValues(w.a, 5), gv = RandomValues(r, 6);
    for (int i = 0; i < w.m; ++i) {
      double want = 0.0, got = 0.0;
      for (int64_t j = 0; j < r; ++j) want += static_cast<double>(d[i + j]) * gv[j];
      for (int xi = 0; xi < w.a; ++xi) {
        double u = 0.0, v = 0.0;
        for (int64_t j = 0; j < r; ++j) u += static_cast<double>(w.g[xi * r + j]) * gv[j];
        for (int l = 0; l < w.a; ++l) v += static_cast<double>(w.bt[xi * w.a + l]) * d[l];
        got += static_cast<double>(w.at[i * w.a + xi]) * u * v;
      }
      EXPECT_NEAR(got, want, 1e-5) << "r " << r << " output " << i;
    }
  }
}

TEST(WinogradTest, OnlySameConv1DsWithThreeOrFiveTapsTakeIt) {
  EXPECT_TRUE(Conv2D::UsesWinograd(ConvTaps{28, 1, 28, 5, 1, 2, 0}));
  EXPECT_TRUE(Conv2D::UsesWinograd(ConvTaps{28, 1, 64, 3, 1, 1, 0}));
  EXPECT_FALSE(Conv2D::UsesWinograd(ConvTaps{28, 1, 28, 5, 1, 0, 0}));  // "valid" padding
  EXPECT_FALSE(Conv2D::UsesWinograd(ConvTaps{28, 1, 28, 7, 1, 3, 0}));  // 7 taps
  EXPECT_FALSE(Conv2D::UsesWinograd(ConvTaps{28, 28, 1, 5, 5, 2, 2}));  // a Conv2D
  EXPECT_FALSE(Conv2D::UsesWinograd(ConvTaps{28, 1, 8, 1, 1, 0, 0}));   // pointwise
}

}  // namespace
}  // namespace tributary::cpu
