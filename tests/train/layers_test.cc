// Every CPU layer's gradients against central finite differences (in double around float32).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "tests/train/grad_check.h"
#include "train/cpu/conv2d.h"
#include "train/cpu/dense.h"
#include "train/cpu/depthwise_conv2d.h"
#include "train/cpu/embedding.h"
#include "train/cpu/gru.h"
#include "train/cpu/lstm.h"
#include "train/cpu/norm.h"
#include "train/cpu/pointwise.h"
#include "train/cpu/softmax_xent.h"
#include "train/dropout_math.h"
#include "train/lstm_math.h"

namespace tributary::cpu {
namespace {

using testing::WorstRelativeError;

std::vector<float> Random(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal()) * scale;
  return v;
}

// Checks a layer: L = sum(out * r) for fixed random r, so dL/dout = r.
void CheckLayer(CpuLayer& layer, int64_t n, int64_t in_size, int64_t out_size, double tol,
                uint64_t seed) {
  std::vector<float> params = Random(layer.num_params(), seed, 0.3f), grads(layer.num_params());
  layer.Bind(params.data(), grads.data());
  std::vector<float> x = Random(n * in_size, seed + 1), out(n * out_size),
                     r = Random(n * out_size, seed + 2);
  auto loss = [&]() {
    layer.Forward(x.data(), out.data(), n);
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += static_cast<double>(out[i]) * r[i];
    return l;
  };
  loss();
  std::vector<float> dx(x.size());
  layer.Backward(x.data(), out.data(), r.data(), dx.data(), n);
  std::vector<float> analytic_params = grads;
  EXPECT_LT(WorstRelativeError(loss, x, dx, 150, seed + 3), tol) << "input gradient";
  if (layer.num_params() > 0) {
    EXPECT_LT(WorstRelativeError(loss, params, analytic_params, 150, seed + 4), tol)
        << "parameter gradient";
  }
}

TEST(LayerGradTest, Dense) {
  Dense d(7, 5);
  CheckLayer(d, 3, 7, 5, 2e-3, 10);
}

TEST(LayerGradTest, Conv2DSamePadding) {
  Conv2D c(6, 5, 3, 4, 3, 1, 2);  // 6x5x3 -> 6x5x4
  CheckLayer(c, 2, 6 * 5 * 3, 6 * 5 * 4, 2e-3, 20);
}

TEST(LayerGradTest, Conv2DWideLayersTakeIm2Col) {
  // More than 16 filters: the im2col and GEMM path (narrower layers take the direct kernels).
  Conv2D c(7, 7, 2, 20, 3, 1, 3);
  ASSERT_FALSE(c.direct());
  CheckLayer(c, 3, 7 * 7 * 2, 7 * 7 * 20, 2e-3, 31);
}

TEST(LayerGradTest, Conv2DValidAcrossChunks) {
  // A 5x5 kernel with no padding on 9x9x2; batch 5 spans several chunks only if chunking works.
  Conv2D c(9, 9, 2, 3, 5, 0, 5);
  CheckLayer(c, 5, 9 * 9 * 2, 5 * 5 * 3, 2e-3, 30);
}

TEST(LayerGradTest, Conv2DLargePaddingMatchesDirectConvolution) {
  // Forward against a direct 7-loop convolution.
  const int64_t h = 5, w = 4, c = 2, oc = 3, k = 3, p = 2, oh = h + 2 * p - k + 1,
                ow = w + 2 * p - k + 1;
  Conv2D conv(h, w, c, oc, k, p, 1);
  std::vector<float> params = Random(conv.num_params(), 5), grads(params.size());
  conv.Bind(params.data(), grads.data());
  std::vector<float> x = Random(h * w * c, 6), y(oh * ow * oc);
  conv.Forward(x.data(), y.data(), 1);
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox)
      for (int64_t o = 0; o < oc; ++o) {
        double acc = params[oc * k * k * c + o];
        for (int64_t ky = 0; ky < k; ++ky)
          for (int64_t kx = 0; kx < k; ++kx)
            for (int64_t i = 0; i < c; ++i) {
              const int64_t iy = oy + ky - p, ix = ox + kx - p;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              acc += static_cast<double>(params[((o * k + ky) * k + kx) * c + i]) *
                     x[(iy * w + ix) * c + i];
            }
        EXPECT_NEAR(y[(oy * ow + ox) * oc + o], acc, 1e-4);
      }
}

// Conv1D: an 8 x 3 x 2 input is 8 steps of 6 channels; kernel 3 x 1 with padding 1 at both ends.
TEST(LayerGradTest, Conv1DAlongTheRows) {
  LayerSpec l;
  l.kind = LayerKind::kConv1D;
  l.out_channels = 4;
  l.kernel = 3;
  l.padding = 1;
  const ConvTaps g = ConvTapsOf(l, Shape3{8, 3, 2});
  EXPECT_EQ(g.h, 8);
  EXPECT_EQ(g.w, 1);
  EXPECT_EQ(g.c, 6);
  EXPECT_EQ(g.oh(), 8);
  EXPECT_EQ(g.ow(), 1);
  Conv2D c(g, 4, 3);
  CheckLayer(c, 3, 8 * 6, 8 * 4, 2e-3, 25);
}

TEST(LayerGradTest, Conv1DMatchesADirectConvolution) {
  // y[t, o] = b[o] + sum_{j, i} w[o, j, i] * x[t + j - p, i]: PyTorch's Conv1d on [C, L].
  const int64_t steps = 9, c = 3, oc = 2, k = 4, p = 1, out_steps = steps + 2 * p - k + 1;
  Conv2D conv(ConvTaps{steps, 1, c, k, 1, p, 0}, oc, 1);
  std::vector<float> params = Random(conv.num_params(), 7), grads(params.size());
  conv.Bind(params.data(), grads.data());
  std::vector<float> x = Random(steps * c, 8), y(out_steps * oc);
  conv.Forward(x.data(), y.data(), 1);
  for (int64_t t = 0; t < out_steps; ++t)
    for (int64_t o = 0; o < oc; ++o) {
      double acc = params[oc * k * c + o];
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < c; ++i) {
          const int64_t at = t + j - p;
          if (at < 0 || at >= steps) continue;
          acc += static_cast<double>(params[(o * k + j) * c + i]) * x[at * c + i];
        }
      EXPECT_NEAR(y[t * oc + o], acc, 1e-5) << t << " " << o;
    }
}

TEST(LayerGradTest, DepthwiseConv2D) {
  DepthwiseConv2D same(DepthwiseGeometry{6, 5, 3, 3, 1});  // 6x5x3 -> 6x5x3
  CheckLayer(same, 3, 6 * 5 * 3, 6 * 5 * 3, 2e-3, 60);
  DepthwiseConv2D valid(DepthwiseGeometry{7, 6, 4, 5, 0});  // 7x6x4 -> 3x2x4
  CheckLayer(valid, 2, 7 * 6 * 4, 3 * 2 * 4, 2e-3, 61);
  DepthwiseConv2D wide(DepthwiseGeometry{4, 4, 2, 3, 2});  // padding past the kernel's reach
  CheckLayer(wide, 2, 4 * 4 * 2, 6 * 6 * 2, 2e-3, 62);
}

TEST(LayerGradTest, DepthwiseConv2DMatchesADirectConvolution) {
  // y[oy, ox, ch] = b[ch] + sum w[ch, ky, kx] x[oy + ky - p, ox + kx - p, ch]: PyTorch's
  // Conv2d(c, c, k, padding=p, groups=c).
  const DepthwiseGeometry g{5, 6, 3, 3, 1};
  DepthwiseConv2D conv(g);
  std::vector<float> params = Random(conv.num_params(), 9), grads(params.size());
  conv.Bind(params.data(), grads.data());
  std::vector<float> x = Random(g.in_size(), 10), y(g.out_size());
  conv.Forward(x.data(), y.data(), 1);
  for (int64_t oy = 0; oy < g.oh(); ++oy)
    for (int64_t ox = 0; ox < g.ow(); ++ox)
      for (int64_t ch = 0; ch < g.c; ++ch) {
        double acc = params[g.c * 9 + ch];
        for (int64_t ky = 0; ky < 3; ++ky)
          for (int64_t kx = 0; kx < 3; ++kx) {
            const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
            acc +=
                static_cast<double>(params[(ch * 3 + ky) * 3 + kx]) * x[(iy * g.w + ix) * g.c + ch];
          }
        EXPECT_NEAR(y[(oy * g.ow() + ox) * g.c + ch], acc, 1e-5) << oy << " " << ox << " " << ch;
      }
}

// Embedding: 3 samples of 5 token ids (repeats within and across samples) into a 7 x 4 table. The
// output is each id's row; the table's gradient against finite differences (every entry); token
// ids have no gradient (zeros).
TEST(LayerGradTest, EmbeddingLooksUpRowsAndSumsTheirGradients) {
  const int64_t n = 3, positions = 5, vocab = 7, dim = 4;
  const std::vector<float> ids = {1, 3, 3, 0, 6, 6, 1, 2, 3, 3, 5, 5, 5, 1, 0};
  Embedding e(positions, vocab, dim);
  ASSERT_EQ(e.num_params(), vocab * dim);
  std::vector<float> table = Random(vocab * dim, 61), grads(table.size());
  e.Bind(table.data(), grads.data());
  std::vector<float> y(n * positions * dim), r = Random(y.size(), 62);
  e.Forward(ids.data(), y.data(), n);
  for (int64_t p = 0; p < n * positions; ++p)
    for (int64_t d = 0; d < dim; ++d)
      EXPECT_EQ(y[p * dim + d], table[static_cast<int64_t>(ids[p]) * dim + d]) << p << " " << d;
  auto loss = [&]() {
    e.Forward(ids.data(), y.data(), n);
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * r[i];
    return l;
  };
  std::vector<float> dx(ids.size(), -1.0f);
  e.Backward(ids.data(), y.data(), r.data(), dx.data(), n);
  const std::vector<float> analytic = grads;
  EXPECT_LT(testing::WorstRelativeError(loss, table, analytic, vocab * dim, 63), 1e-3);
  EXPECT_EQ(dx, std::vector<float>(ids.size(), 0.0f));
  // Token 4 never appears: its row has no gradient. Token 3 appears four times.
  for (int64_t d = 0; d < dim; ++d) {
    EXPECT_EQ(analytic[4 * dim + d], 0.0f);
    EXPECT_NEAR(analytic[3 * dim + d],
                r[1 * dim + d] + r[2 * dim + d] + r[8 * dim + d] + r[9 * dim + d], 1e-5);
  }
}

// LSTM: 3 samples of 5 steps of 4 features into 6 units, through time: the input and every
// parameter against finite differences, returning the last step's state or every step's.
TEST(LayerGradTest, LstmThroughTime) {
  for (const bool sequences : {false, true}) {
    SCOPED_TRACE(sequences ? "every step" : "last step");
    Lstm l(RecurrentShape{5, 4, 6, sequences});
    ASSERT_EQ(l.num_params(), 4 * 6 * (4 + 6) + 8 * 6);
    CheckLayer(l, 3, 5 * 4, sequences ? 5 * 6 : 6, 2e-3, sequences ? 64 : 65);
  }
}

// The forward against the equations of PyTorch's nn.LSTM (gates i, f, g, o; zero start), in
// double, over 7 steps.
TEST(LayerGradTest, LstmMatchesTheEquationsInDouble) {
  const int64_t n = 2, T = 7, F = 3, H = 4, G = 4 * H;
  Lstm l(RecurrentShape{T, F, H, true});
  std::vector<float> params = Random(l.num_params(), 66, 0.5f), grads(params.size());
  l.Bind(params.data(), grads.data());
  const float *w_ih = params.data(), *w_hh = w_ih + G * F, *b_ih = w_hh + G * H, *b_hh = b_ih + G;
  std::vector<float> x = Random(n * T * F, 67), y(n * T * H);
  l.Forward(x.data(), y.data(), n);
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t s = 0; s < n; ++s) {
    std::vector<double> h(H, 0.0), c(H, 0.0);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> z(G);
      for (int64_t j = 0; j < G; ++j) {
        z[j] = double{b_ih[j]} + b_hh[j];
        for (int64_t f = 0; f < F; ++f) z[j] += double{w_ih[j * F + f]} * x[(s * T + t) * F + f];
        for (int64_t k = 0; k < H; ++k) z[j] += double{w_hh[j * H + k]} * h[k];
      }
      for (int64_t u = 0; u < H; ++u) {
        c[u] = sigmoid(z[H + u]) * c[u] + sigmoid(z[u]) * std::tanh(z[2 * H + u]);
        h[u] = sigmoid(z[3 * H + u]) * std::tanh(c[u]);
        EXPECT_NEAR(y[(s * T + t) * H + u], h[u], 2e-6) << s << " " << t << " " << u;
      }
    }
  }
}

// GRU: as the LSTM above, 3 samples of 5 steps of 4 features into 6 units.
TEST(LayerGradTest, GruThroughTime) {
  for (const bool sequences : {false, true}) {
    SCOPED_TRACE(sequences ? "every step" : "last step");
    Gru g(RecurrentShape{5, 4, 6, sequences});
    ASSERT_EQ(g.num_params(), 3 * 6 * (4 + 6) + 6 * 6);
    CheckLayer(g, 3, 5 * 4, sequences ? 5 * 6 : 6, 2e-3, sequences ? 68 : 69);
  }
}

// Sequence lengths (PyTorch's pack_padded_sequence): for an LSTM and a GRU, returning every step or
// the last, 3 samples of lengths 5 (all), 2 and 0 (all padding). The gradients against finite
// differences; each sample's outputs are those of the same layer run on its first `length` steps
// alone, within rounding (its last output the state at its length, zeros after it and for the empty
// sample), and its padded steps' inputs get no gradient.
TEST(LayerGradTest, RecurrentLayersStopAtEachSamplesLength) {
  const int64_t T = 5, F = 4, H = 6, n = 3;
  const int32_t lengths[n] = {5, 2, 0};
  for (const bool lstm : {true, false}) {
    for (const bool sequences : {false, true}) {
      SCOPED_TRACE(::testing::Message() << (lstm ? "lstm" : "gru") << (sequences ? " every" : ""));
      auto make = [&](int64_t steps) -> std::unique_ptr<CpuLayer> {
        if (lstm) return std::make_unique<Lstm>(RecurrentShape{steps, F, H, sequences});
        return std::make_unique<Gru>(RecurrentShape{steps, F, H, sequences});
      };
      auto layer = make(T);
      layer->BeginBatch(true, 0, 0, lengths);
      const int64_t out_size = sequences ? T * H : H;
      CheckLayer(*layer, n, T * F, out_size, 2e-3, lstm ? 72 : 73);

      std::vector<float> params = Random(layer->num_params(), 74, 0.5f), grads(params.size());
      layer->Bind(params.data(), grads.data());
      const auto x = Random(static_cast<size_t>(n * T * F), 75);
      std::vector<float> y(static_cast<size_t>(n * out_size)), dx(x.size());
      layer->Forward(x.data(), y.data(), n);
      const auto g = Random(y.size(), 76);
      layer->Backward(x.data(), y.data(), g.data(), dx.data(), n);
      for (int64_t s = 0; s < n; ++s) {
        const int64_t len = lengths[s];
        const float* ys = y.data() + s * out_size;
        if (len == 0) {
          EXPECT_TRUE(std::all_of(ys, ys + out_size, [](float v) { return v == 0.0f; }));
        } else {
          auto alone = make(len);
          std::vector<float> pg(params.size());
          alone->Bind(params.data(), pg.data());
          std::vector<float> want(static_cast<size_t>(sequences ? len * H : H));
          alone->Forward(x.data() + s * T * F, want.data(), 1);
          // Within rounding: a GEMM over 3 rows may sum in another order than over 1.
          for (size_t k = 0; k < want.size(); ++k)
            EXPECT_NEAR(ys[k], want[k], 1e-6) << s << " " << k;
          if (sequences) {
            EXPECT_TRUE(std::all_of(ys + len * H, ys + T * H, [](float v) { return v == 0.0f; }));
          }
        }
        const float* dxs = dx.data() + s * T * F;
        EXPECT_TRUE(std::all_of(dxs + len * F, dxs + T * F, [](float v) { return v == 0.0f; }))
            << "sample " << s;
      }
    }
  }
}

// The forward against the equations of PyTorch's nn.GRU (gates r, z, n; the reset gate scales
// W_hn h + b_hn), in double, over 7 steps.
TEST(LayerGradTest, GruMatchesTheEquationsInDouble) {
  const int64_t n = 2, T = 7, F = 3, H = 4, G = 3 * H;
  Gru g(RecurrentShape{T, F, H, true});
  std::vector<float> params = Random(g.num_params(), 70, 0.5f), grads(params.size());
  g.Bind(params.data(), grads.data());
  const float *w_ih = params.data(), *w_hh = w_ih + G * F, *b_ih = w_hh + G * H, *b_hh = b_ih + G;
  std::vector<float> x = Random(n * T * F, 71), y(n * T * H);
  g.Forward(x.data(), y.data(), n);
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  for (int64_t s = 0; s < n; ++s) {
    std::vector<double> h(H, 0.0);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> ax(G), ah(G);
      for (int64_t j = 0; j < G; ++j) {
        ax[j] = b_ih[j];
        ah[j] = b_hh[j];
        for (int64_t f = 0; f < F; ++f) ax[j] += double{w_ih[j * F + f]} * x[(s * T + t) * F + f];
        for (int64_t k = 0; k < H; ++k) ah[j] += double{w_hh[j * H + k]} * h[k];
      }
      for (int64_t u = 0; u < H; ++u) {
        const double r = sigmoid(ax[u] + ah[u]), z = sigmoid(ax[H + u] + ah[H + u]),
                     c = std::tanh(ax[2 * H + u] + r * ah[2 * H + u]);
        h[u] = (1 - z) * c + z * h[u];
        EXPECT_NEAR(y[(s * T + t) * H + u], h[u], 2e-6) << s << " " << t << " " << u;
      }
    }
  }
}

TEST(LayerGradTest, MaxPool) {
  MaxPool2D p(6, 4, 3, 2, 2);  // 2x2 windows: the in-register path
  CheckLayer(p, 2, 6 * 4 * 3, 3 * 2 * 3, 1e-3, 40);
  MaxPool2D wide(7, 6, 2, 3, 2);  // 3x3 windows (a row left over): the general loop
  CheckLayer(wide, 2, 7 * 6 * 2, 2 * 2 * 2, 1e-3, 41);
}

TEST(LayerGradTest, MaxPoolPathsAgreeOnTies) {
  // The 2x2 path and the general loop keep the first of equal values in window order: on an
  // image with many ties, 2x2 windows through both give the same values and the same gradient.
  const int64_t h = 4, w = 6, c = 3;
  std::vector<float> x(h * w * c);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 3);
  std::vector<float> go = Random(2 * 3 * c, 43);
  MaxPool2D fast(h, w, c, 2, 1);
  std::vector<float> y(2 * 3 * c), gi(x.size());
  fast.Forward(x.data(), y.data(), 1);
  fast.Backward(x.data(), y.data(), go.data(), gi.data(), 1);
  // The same windows as a 2x2 pooling of a 4x6 image, taken as a generic k=2 window by hand.
  for (int64_t oy = 0; oy < 2; ++oy)
    for (int64_t ox = 0; ox < 3; ++ox)
      for (int64_t ch = 0; ch < c; ++ch) {
        int64_t at = ((2 * oy) * w + 2 * ox) * c + ch;
        for (int64_t ky = 0; ky < 2; ++ky)
          for (int64_t kx = 0; kx < 2; ++kx) {
            const int64_t i = ((2 * oy + ky) * w + 2 * ox + kx) * c + ch;
            if (x[i] > x[at]) at = i;
          }
        EXPECT_EQ(y[(oy * 3 + ox) * c + ch], x[at]);
        EXPECT_EQ(gi[at], go[(oy * 3 + ox) * c + ch]) << oy << " " << ox << " " << ch;
      }
}

TEST(LayerGradTest, ReLU) {
  ReLU r(11);
  CheckLayer(r, 3, 11, 11, 1e-3, 50);
}

TEST(LayerGradTest, GroupNormAndLayerNorm) {
  // GroupNorm: 3x2 positions, 6 channels in 3 groups; LayerNorm over each position's 5 channels.
  Norm group(NormGeometry{6, 6, 3, false}, 2);
  CheckLayer(group, 2, 36, 36, 2e-3, 47);
  Norm layer(NormGeometry{4, 5, 1, true}, 3);
  CheckLayer(layer, 3, 20, 20, 2e-3, 48);
  // By hand: LayerNorm of (1, 2, 3) with gamma 2 and beta 1 is 1 + 2 (x - 2) / sqrt(2/3 + eps).
  Norm one(NormGeometry{1, 3, 1, true}, 1);
  std::vector<float> p = {2.0f, 2.0f, 2.0f, 1.0f, 1.0f, 1.0f}, g(6);
  one.Bind(p.data(), g.data());
  const float x[3] = {1.0f, 2.0f, 3.0f};
  float y[3];
  one.Forward(x, y, 1);
  const double r = 1.0 / std::sqrt(2.0 / 3.0 + 1e-5);
  EXPECT_NEAR(y[0], 1.0 - 2.0 * r, 1e-6);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_NEAR(y[2], 1.0 + 2.0 * r, 1e-6);
}

TEST(LayerGradTest, AvgPoolAndGlobalAvgPool) {
  AvgPool2D p(5, 4, 3, 2, 2);  // a row left over: it gets no gradient
  CheckLayer(p, 2, 5 * 4 * 3, 2 * 2 * 3, 1e-3, 45);
  AvgPool2D global(3, 4, 2, 3, 4);
  CheckLayer(global, 2, 3 * 4 * 2, 2, 1e-3, 46);
  // By hand: the mean of a 2x2 window of one channel.
  AvgPool2D one(2, 2, 1, 2, 2);
  const float x[4] = {1.0f, 2.0f, 3.0f, 6.0f};
  float y = 0.0f;
  one.Forward(x, &y, 1);
  EXPECT_EQ(y, 3.0f);
}

// Dropout in a training batch: the gradient through a fixed mask; torch.nn.Dropout's values (a kept
// value is x * (1 / (1 - p)), a dropped one 0, and the backward the same on the gradient); the
// share dropped; a shard's mask the same rows of the whole batch's; outside training a copy.
TEST(LayerGradTest, Dropout) {
  const int64_t size = 1000, n = 4;
  const float rate = 0.3f;
  Dropout d(rate, size);
  d.BeginBatch(/*training=*/true, DropoutKey(11, 2, 5), 0, nullptr);
  CheckLayer(d, n, size, size, 1e-3, 60);

  const auto x = Random(static_cast<size_t>(n * size), 61);
  std::vector<float> y(x.size()), g(x.size()), dx(x.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i % 7) + 1.0f;
  d.Forward(x.data(), y.data(), n);
  d.Backward(x.data(), y.data(), g.data(), dx.data(), n);
  const float scale = 1.0f / (1.0f - rate);
  EXPECT_EQ(DropoutScale(rate), scale);
  int64_t dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0.0f) {
      ++dropped;
      EXPECT_EQ(dx[i], 0.0f) << i;
    } else {
      EXPECT_EQ(y[i], x[i] * scale) << i;
      EXPECT_EQ(dx[i], g[i] * scale) << i;
    }
  }
  // 4,000 draws at p = 0.3: the mean is 1,200 and the standard deviation 29; 5 of them either way.
  EXPECT_NEAR(static_cast<double>(dropped), 1200.0, 145.0);

  // Samples 2 and 3 as a thread's shard (first sample 2) get the whole batch's rows 2 and 3.
  Dropout shard(rate, size);
  shard.BeginBatch(true, DropoutKey(11, 2, 5), 2, nullptr);
  std::vector<float> part(static_cast<size_t>(2 * size));
  shard.Forward(x.data() + 2 * size, part.data(), 2);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), y.begin() + 2 * size));

  // Another step's key drops other values; evaluation drops none.
  std::vector<float> other(x.size());
  d.BeginBatch(true, DropoutKey(11, 3, 5), 0, nullptr);
  d.Forward(x.data(), other.data(), n);
  EXPECT_NE(other, y);
  d.BeginBatch(/*training=*/false, DropoutKey(11, 3, 5), 0, nullptr);
  d.Forward(x.data(), other.data(), n);
  EXPECT_EQ(other, x);
  d.Backward(x.data(), other.data(), g.data(), dx.data(), n);
  EXPECT_EQ(dx, g);
}

// Add: out = in + source; the backward passes grad_out to the input and adds it to the source's
// gradient buffer (which the engine zeroes before a backward).
TEST(LayerGradTest, AddPassesTheGradientToBothOperands) {
  const int64_t size = 5, n = 2;
  auto source = Random(static_cast<size_t>(n * size), 62);
  std::vector<float> source_grad(source.size(), 0.5f);  // what another add sent: kept, added to
  Add add(size);
  add.Connect(source.data(), source_grad.data());
  CheckLayer(add, n, size, size, 1e-3, 63);  // the input's gradient
  const auto x = Random(source.size(), 64), g = Random(source.size(), 65);
  std::vector<float> y(x.size()), dx(x.size());
  std::fill(source_grad.begin(), source_grad.end(), 0.5f);
  add.Forward(x.data(), y.data(), n);
  add.Backward(x.data(), y.data(), g.data(), dx.data(), n);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y[i], x[i] + source[i]);
    EXPECT_EQ(dx[i], g[i]);
    EXPECT_EQ(source_grad[i], 0.5f + g[i]);
  }
}

TEST(LayerGradTest, SigmoidTanhAndGelu) {
  for (ActivationFn fn : {ActivationFn::kSigmoid, ActivationFn::kTanh, ActivationFn::kGelu}) {
    SCOPED_TRACE(static_cast<int>(fn));
    Activation a(fn, 13);
    CheckLayer(a, 3, 13, 13, 1e-3, 55);
  }
}

// The activations' values at points worked out by hand (GELU's with erf's tables).
TEST(LayerGradTest, SmoothActivationValues) {
  EXPECT_FLOAT_EQ(ActivationForward(ActivationFn::kSigmoid, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(ActivationForward(ActivationFn::kSigmoid, 2.0f), 0.880797077f);
  EXPECT_FLOAT_EQ(ActivationForward(ActivationFn::kTanh, 0.5f), 0.462117157f);
  EXPECT_FLOAT_EQ(ActivationForward(ActivationFn::kGelu, 1.0f), 0.841344746f);
  EXPECT_FLOAT_EQ(ActivationForward(ActivationFn::kGelu, -1.0f), -0.158655254f);
  EXPECT_EQ(ActivationForward(ActivationFn::kGelu, 0.0f), 0.0f);
  EXPECT_FLOAT_EQ(ActivationSlope(ActivationFn::kGelu, 0.0f, 0.0f), 0.5f);
  // Saturated tails stay finite: sigmoid(-100) is 0 and its slope 0, not NaN.
  const float s = ActivationForward(ActivationFn::kSigmoid, -100.0f);
  EXPECT_EQ(ActivationSlope(ActivationFn::kSigmoid, -100.0f, s), s * (1.0f - s));
  EXPECT_TRUE(std::isfinite(ActivationSlope(ActivationFn::kGelu, -100.0f, 0.0f)));
}

TEST(LayerGradTest, SoftmaxCrossEntropy) {
  const int64_t n = 4, k = 5;
  std::vector<float> z = Random(n * k, 60, 2.0f), g(n * k);
  std::vector<uint8_t> y = {0, 4, 2, 2};
  StepStats st = SoftmaxCrossEntropy(z.data(), y.data(), n, k, g.data(), n);
  EXPECT_EQ(st.count, n);
  auto loss = [&]() {
    return SoftmaxCrossEntropy(z.data(), y.data(), n, k, nullptr, n).loss_sum / n;
  };
  EXPECT_NEAR(loss(), st.loss_sum / n, 1e-9);
  EXPECT_LT(WorstRelativeError(loss, z, g, 100, 61, 1e-3), 2e-3);
  // Uniform logits: loss is log(k) per sample.
  std::vector<float> flat(n * k, 0.5f);
  EXPECT_NEAR(SoftmaxCrossEntropy(flat.data(), y.data(), n, k, nullptr, n).loss_sum / n,
              std::log(5.0), 1e-6);
}

// Mean squared error and binary cross-entropy against the one-hot label (nn.MSELoss and
// nn.BCEWithLogitsLoss with their mean over every output): values by hand, gradients by finite
// differences, the prediction the argmax, and what predict returns.
TEST(LayerGradTest, MeanSquaredErrorAndBinaryCrossEntropy) {
  const std::vector<float> z2 = {0.5f, -1.0f};
  const std::vector<uint8_t> y0 = {0};
  EXPECT_NEAR(
      ComputeLoss(LossKind::kMeanSquaredError, z2.data(), y0.data(), 1, 2, nullptr, 1).loss_sum,
      (0.25 + 1.0) / 2, 1e-12);
  EXPECT_NEAR(
      ComputeLoss(LossKind::kBinaryCrossEntropy, z2.data(), y0.data(), 1, 2, nullptr, 1).loss_sum,
      (std::log1p(std::exp(-0.5)) + std::log1p(std::exp(-1.0))) / 2, 1e-12);
  std::vector<float> out(2);
  Predictions(LossKind::kBinaryCrossEntropy, z2.data(), 1, 2, out.data());
  EXPECT_FLOAT_EQ(out[0], 1.0f / (1.0f + std::exp(-0.5f)));
  Predictions(LossKind::kMeanSquaredError, z2.data(), 1, 2, out.data());
  EXPECT_EQ(out, z2);

  const int64_t n = 4, k = 5;
  const std::vector<uint8_t> y = {0, 4, 2, 2};
  for (LossKind kind : {LossKind::kMeanSquaredError, LossKind::kBinaryCrossEntropy}) {
    std::vector<float> z = Random(n * k, 62, 2.0f), g(n * k);
    const StepStats st = ComputeLoss(kind, z.data(), y.data(), n, k, g.data(), n);
    EXPECT_EQ(st.count, n);
    int64_t correct = 0;
    for (int64_t i = 0; i < n; ++i)
      correct +=
          std::max_element(z.begin() + i * k, z.begin() + (i + 1) * k) - z.begin() - i * k == y[i];
    EXPECT_EQ(st.correct, correct);
    auto loss = [&]() {
      return ComputeLoss(kind, z.data(), y.data(), n, k, nullptr, n).loss_sum / n;
    };
    EXPECT_LT(WorstRelativeError(loss, z, g, 100, 63, 1e-3), 2e-3) << static_cast<int>(kind);
  }
}

}  // namespace
}  // namespace tributary::cpu
