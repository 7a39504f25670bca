// The CUDA backend's kernels, compiled as plain C++ and run on the CPU through
// train/cuda/host_emulation.h (one std::thread per CUDA thread of a block, a barrier for
// __syncthreads). Checks every kernel's indexing, reductions and launch geometry against the CPU
// reference on any machine, GPU or not. Real-GPU parity is cuda_ops_test.cc's job; this test cannot
// see device-only problems (memory model, occupancy, nvcc codegen).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "train/cpu/conv2d.h"
#include "train/cpu/depthwise_conv2d.h"
#include "train/cpu/embedding.h"
#include "train/cpu/gru.h"
#include "train/cpu/lstm.h"
#include "train/cpu/norm.h"
#include "train/cpu/pointwise.h"
#include "train/cpu/softmax_xent.h"
#include "train/sgd.h"

// The kernels themselves. host_emulation.h must come before any CUDA header.
#define TRIB_CUDA_HOST_EMULATION 1
#include "train/cuda/host_emulation.h"
// clang-format off
#include "train/cuda/gather.cu"
#include "train/cuda/im2col.cu"
#include "train/cuda/maxpool.cu"
#include "train/cuda/relu.cu"
#include "train/cuda/activations.cu"
#include "train/cuda/dropout.cu"
#include "train/cuda/add.cu"
#include "train/cuda/avgpool.cu"
#include "train/cuda/norm.cu"
#include "train/cuda/depthwise.cu"
#include "train/cuda/embedding.cu"
#include "train/cuda/lstm.cu"
#include "train/cuda/gru.cu"
#include "train/cuda/bias.cu"
#include "train/cuda/softmax_xent.cu"
#include "train/cuda/sgd.cu"
#include "train/cuda/adam_params.h"
// clang-format on

namespace tributary::cuda {
namespace {

constexpr cudaStream_t kStream = nullptr;

std::vector<float> Random(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal()) * scale;
  return v;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

// Row-major y[m, n] = a[m, k] * b[n, k]^T (the GEMM cuBLAS does in the conv layer), in double.
std::vector<float> MatMulBt(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                            int64_t n, int64_t k) {
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t t = 0; t < k; ++t) s += static_cast<double>(a[i * k + t]) * b[j * k + t];
      y[i * n + j] = static_cast<float>(s);
    }
  return y;
}

TEST(KernelEmulationTest, GatherCopiesTheIndexedSamples) {
  const int64_t size = 300, ss = 7;
  const auto images = Random(size * ss, 1);
  std::vector<uint8_t> labels(size);
  for (int64_t i = 0; i < size; ++i) labels[i] = static_cast<uint8_t>(i % 10);
  const std::vector<uint32_t> idx = {299, 0, 17, 17, 150};
  std::vector<float> x(idx.size() * ss);
  std::vector<uint8_t> y(idx.size());
  ASSERT_EQ(LaunchGatherBatch(images.data(), labels.data(), idx.data(), 5, ss, x.data(), y.data(),
                              kStream),
            cudaSuccess);
  for (size_t i = 0; i < idx.size(); ++i) {
    EXPECT_EQ(y[i], labels[idx[i]]);
    for (int64_t j = 0; j < ss; ++j) EXPECT_EQ(x[i * ss + j], images[idx[i] * ss + j]);
  }
}

// A square kernel k with padding p, or with kw > 0 a kernel k x kw with padding p x pw (Conv1D's
// is k x 1 with pw 0).
struct ConvCase {
  int64_t h, w, c, oc, k, p, n;
  int64_t kw = 0, pw = 0;
  ConvTaps taps() const { return ConvTaps{h, w, c, k, kw > 0 ? kw : k, p, kw > 0 ? pw : p}; }
};

class KernelConvTest : public ::testing::TestWithParam<ConvCase> {};

// im2col followed by the GEMM must give the CPU Conv2D's output, and the GEMM's adjoint followed by
// col2im its input gradient: this pins the column layout to the OHWI weight matrix.
TEST_P(KernelConvTest, Im2ColAndCol2ImReproduceTheCpuConvolution) {
  const ConvCase cc = GetParam();
  const ConvTaps shape = cc.taps();
  const ConvGeometry g =
      ConvGeometry::Of(shape.h, shape.w, shape.c, shape.kh, shape.kw, shape.ph, shape.pw);
  const int64_t taps = g.taps(), pix = g.oh * g.ow, in_size = cc.h * cc.w * cc.c;
  cpu::Conv2D ref(shape, cc.oc, cc.n);
  auto params = Random(static_cast<size_t>(ref.num_params()), 3, 0.3f);
  std::fill(params.begin() + cc.oc * taps, params.end(), 0.0f);  // zero bias: compare the GEMM part
  std::vector<float> grads(params.size());
  ref.Bind(params.data(), grads.data());
  const auto x = Random(static_cast<size_t>(cc.n * in_size), 4);
  const auto dy = Random(static_cast<size_t>(cc.n * pix * cc.oc), 5);
  std::vector<float> want_y(dy.size()), want_dx(x.size());
  ref.Forward(x.data(), want_y.data(), cc.n);
  ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), cc.n);

  std::vector<float> cols(static_cast<size_t>(cc.n * pix * taps), -1.0f);
  ASSERT_EQ(LaunchIm2Col(x.data(), cc.n, g, cols.data(), kStream), cudaSuccess);
  const std::vector<float> weight(params.begin(), params.begin() + cc.oc * taps);
  ExpectNear(MatMulBt(cols, weight, cc.n * pix, cc.oc, taps), want_y, 1e-4f);

  // dcols = dy * W, i.e. dy[m, oc] times weight[oc, taps]: MatMulBt with weight transposed.
  std::vector<float> wt(static_cast<size_t>(taps * cc.oc));
  for (int64_t o = 0; o < cc.oc; ++o)
    for (int64_t t = 0; t < taps; ++t) wt[t * cc.oc + o] = weight[o * taps + t];
  const auto dcols = MatMulBt(dy, wt, cc.n * pix, taps, cc.oc);
  std::vector<float> dx(x.size(), -1.0f);
  ASSERT_EQ(LaunchCol2Im(dcols.data(), cc.n, g, dx.data(), kStream), cudaSuccess);
  ExpectNear(dx, want_dx, 1e-4f);

  // The 64-bit-index instantiations (used only for batches past 2^31 elements) agree exactly.
  const int64_t cols_total = cc.n * pix * taps, in_total = cc.n * in_size;
  std::vector<float> cols64(cols.size()), dx64(dx.size());
  emulation::Launch(Im2ColKernel<int64_t>, dim3(GridFor(cols_total)), dim3(kThreads))(
      x.data(), cols_total, Geometry<int64_t>(g), cols64.data());
  emulation::Launch(Col2ImKernel<int64_t>, dim3(GridFor(in_total)), dim3(kThreads))(
      dcols.data(), in_total, Geometry<int64_t>(g), dx64.data());
  EXPECT_EQ(cols64, cols);
  EXPECT_EQ(dx64, dx);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, KernelConvTest,
    ::testing::Values(ConvCase{8, 8, 1, 4, 5, 2, 2}, ConvCase{9, 7, 3, 4, 3, 0, 2},
                      ConvCase{6, 5, 4, 3, 3, 1, 3}, ConvCase{5, 5, 2, 2, 5, 2, 1},
                      // Conv1D's geometry: 12 steps of 5 channels, k 3 x 1
                      ConvCase{12, 1, 5, 4, 3, 1, 2, 1, 0}, ConvCase{7, 6, 2, 3, 3, 2, 2, 2, 0}));

struct PoolCase {
  int64_t h, w, c, k, n;
};

class KernelPoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(KernelPoolTest, MatchesCpuExactlyIncludingTies) {
  const PoolCase pc = GetParam();
  const PoolGeometry g{pc.h, pc.w, pc.c, pc.k, pc.h / pc.k, pc.w / pc.k};
  const int64_t in_size = pc.h * pc.w * pc.c, out_size = g.oh * g.ow * pc.c;
  cpu::MaxPool2D ref(pc.h, pc.w, pc.c, pc.k, pc.n);
  auto x = Random(static_cast<size_t>(pc.n * in_size), 6);
  for (float& v : x) v = std::round(v * 2.0f) / 2.0f;  // many ties
  const auto dy = Random(static_cast<size_t>(pc.n * out_size), 7);
  std::vector<float> want_y(dy.size()), want_dx(x.size());
  ref.Forward(x.data(), want_y.data(), pc.n);
  ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), pc.n);
  std::vector<float> y(dy.size()), dx(x.size(), -1.0f);
  std::vector<int32_t> argmax(dy.size());
  ASSERT_EQ(LaunchMaxPoolForward(x.data(), pc.n, g, y.data(), argmax.data(), kStream), cudaSuccess);
  ASSERT_EQ(LaunchMaxPoolBackward(dy.data(), argmax.data(), pc.n, g, dx.data(), kStream),
            cudaSuccess);
  EXPECT_EQ(y, want_y);
  EXPECT_EQ(dx, want_dx);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KernelPoolTest,
                         ::testing::Values(PoolCase{8, 8, 3, 2, 2}, PoolCase{7, 8, 2, 2, 3},
                                           PoolCase{10, 11, 2, 3, 2}));

TEST(KernelEmulationTest, ReluMatchesCpu) {
  const int64_t size = 333, n = 2;
  cpu::ReLU ref(size);
  auto x = Random(static_cast<size_t>(n * size), 8);
  x[5] = 0.0f;
  const auto dy = Random(x.size(), 9);
  std::vector<float> want_y(x.size()), want_dx(x.size()), y(x.size()), dx(x.size());
  ref.Forward(x.data(), want_y.data(), n);
  ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);
  ASSERT_EQ(LaunchReluForward(x.data(), y.data(), n * size, kStream), cudaSuccess);
  ASSERT_EQ(LaunchReluBackward(y.data(), dy.data(), dx.data(), n * size, kStream), cudaSuccess);
  EXPECT_EQ(y, want_y);
  EXPECT_EQ(dx, want_dx);
}

TEST(KernelEmulationTest, DepthwiseConv2DIsTheCpusBits) {
  for (const DepthwiseGeometry& g :
       {DepthwiseGeometry{6, 5, 3, 3, 1}, DepthwiseGeometry{7, 4, 5, 5, 0},
        DepthwiseGeometry{3, 3, 2, 3, 2}}) {
    const int64_t n = 3;
    cpu::DepthwiseConv2D ref(g);
    auto params = Random(static_cast<size_t>(ref.num_params()), 21, 0.4f);
    std::vector<float> grads(params.size());
    ref.Bind(params.data(), grads.data());
    const auto x = Random(static_cast<size_t>(n * g.in_size()), 22);
    const auto dy = Random(static_cast<size_t>(n * g.out_size()), 23);
    std::vector<float> want_y(dy.size()), want_dx(x.size());
    ref.Forward(x.data(), want_y.data(), n);
    ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);

    const float* w = params.data();
    const float* b = params.data() + g.c * g.k * g.k;
    std::vector<float> y(want_y.size(), -1.0f), dx(x.size(), -1.0f), dparams(params.size(), -1.0f);
    ASSERT_EQ(LaunchDepthwiseForward(g, x.data(), n, w, b, y.data(), kStream), cudaSuccess);
    ASSERT_EQ(LaunchDepthwiseBackward(g, x.data(), dy.data(), n, w, dparams.data(),
                                      dparams.data() + g.c * g.k * g.k, dx.data(), kStream),
              cudaSuccess);
    EXPECT_EQ(y, want_y) << g.h << "x" << g.w << "x" << g.c << " k" << g.k;
    EXPECT_EQ(dx, want_dx);
    EXPECT_EQ(dparams, grads);
  }
}

// Token ids with repeats, one out of the vocabulary (-1), one not an integer (2.5) and a NaN: the
// lookups, the zeros, and each row's gradient summed in position order, bit for bit.
// Each sample's length: the positions before its first pad token.
TEST(KernelEmulationTest, SequenceLengthsStopAtTheFirstPad) {
  const std::vector<float> ids = {1, 2, 3, 9, 9,   // 3
                                  9, 1, 1, 1, 1,   // 0
                                  4, 4, 4, 4, 4,   // 5: no pad
                                  1, 9, 2, 9, 9};  // 1
  std::vector<int32_t> lengths(4, -1);
  ASSERT_EQ(LaunchSequenceLengths(ids.data(), 4, 5, 9.0f, lengths.data(), kStream), cudaSuccess);
  EXPECT_EQ(lengths, (std::vector<int32_t>{3, 0, 5, 1}));
}

TEST(KernelEmulationTest, EmbeddingIsTheCpusBits) {
  const int64_t n = 3, positions = 4, vocab = 6, dim = 5;
  const std::vector<float> ids = {0, 5, 2, 2, 1, -1, 2, 5, 2.5f, 3, std::nanf(""), 0};
  cpu::Embedding ref(positions, vocab, dim);
  auto table = Random(static_cast<size_t>(vocab * dim), 29);
  std::vector<float> want_dw(table.size(), -1.0f);
  ref.Bind(table.data(), want_dw.data());
  const auto dy = Random(static_cast<size_t>(n * positions * dim), 30);
  std::vector<float> want_y(dy.size()), want_dx(ids.size(), -1.0f);
  ref.Forward(ids.data(), want_y.data(), n);
  ref.Backward(ids.data(), want_y.data(), dy.data(), want_dx.data(), n);
  for (int64_t d = 0; d < dim; ++d) {
    EXPECT_EQ(want_y[static_cast<size_t>(5 * dim + d)], 0.0f);  // -1 looks up nothing
    EXPECT_EQ(want_y[static_cast<size_t>(d)], table[static_cast<size_t>(d)]);  // token 0
    EXPECT_EQ(want_dw[static_cast<size_t>(4 * dim + d)], 0.0f);  // token 4 never appears
  }
  EXPECT_EQ(want_dx, std::vector<float>(ids.size(), 0.0f));

  std::vector<float> y(want_y.size(), -1.0f), dx(ids.size(), -1.0f), dw(table.size(), -1.0f);
  ASSERT_EQ(LaunchEmbeddingForward(ids.data(), n * positions, vocab, dim, table.data(), y.data(),
                                   kStream),
            cudaSuccess);
  ASSERT_EQ(LaunchEmbeddingBackward(ids.data(), dy.data(), n * positions, vocab, dim, dw.data(),
                                    dx.data(), kStream),
            cudaSuccess);
  EXPECT_EQ(y, want_y);
  EXPECT_EQ(dw, want_dw);
  EXPECT_EQ(dx, want_dx);
}

// c[m, n] (+)= op(a) op(b), row-major, in double: the GEMMs that cuBLAS runs between the LSTM's
// step kernels.
void HostGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
              float* c, bool accumulate) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = accumulate ? c[i * n + j] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        acc += double{ta ? a[p * m + i] : a[i * k + p]} * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = static_cast<float>(acc);
    }
}

// A CPU recurrent layer's run that the step-kernel tests compose the kernels against: its
// parameters (random, from `seed`), input and output gradient, and its outputs, parameter
// gradients and input gradient for n samples (with `lengths`, or every step).
struct RecurrentReference {
  std::vector<float> params, grads, x, dy, y, dx;
};

template <class Layer>
RecurrentReference RunRecurrentReference(const RecurrentShape& sh, int64_t n,
                                         const int32_t* lengths, uint64_t seed) {
  Layer ref(sh);
  ref.BeginBatch(true, 0, 0, lengths);
  RecurrentReference r;
  r.params = Random(static_cast<size_t>(ref.num_params()), seed, 0.4f);
  r.grads.resize(r.params.size());
  ref.Bind(r.params.data(), r.grads.data());
  r.x = Random(static_cast<size_t>(n * sh.steps * sh.features), seed + 1);
  r.dy = Random(static_cast<size_t>(n * (sh.sequences ? sh.steps : 1) * sh.units), seed + 2);
  r.y.resize(r.dy.size());
  r.dx.resize(r.x.size());
  ref.Forward(r.x.data(), r.y.data(), n);
  ref.Backward(r.x.data(), r.y.data(), r.dy.data(), r.dx.data(), n);
  return r;
}

// The CUDA LSTM's step kernels, with the layer's GEMMs done on the host in the order lstm.cc
// issues them, against the CPU layer: the outputs, every parameter's gradient and the input's
// (within float rounding: the GEMMs sum in another order). Both the last step's output and every
// step's; every step of every sample, and with sequence lengths (6, 3, 0 and 5 of 6 steps).
TEST(KernelEmulationTest, LstmStepsComposeToTheCpuLayer) {
  const int32_t lengths_of[4] = {6, 3, 0, 5};
  for (const int32_t* lengths : {static_cast<const int32_t*>(nullptr), lengths_of})
    for (const bool sequences : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << (sequences ? "every step" : "last step") << (lengths ? ", lengths" : ""));
      const RecurrentShape sh{6, 3, 5, sequences};
      const int64_t n = 4, T = sh.steps, F = sh.features, H = sh.units, G = 4 * H;
      const int64_t out_size = sequences ? T * H : H;
      const RecurrentReference ref = RunRecurrentReference<cpu::Lstm>(sh, n, lengths, 31);
      const std::vector<float>&params = ref.params, &want_grads = ref.grads, &x = ref.x,
            &dy = ref.dy, &want_y = ref.y, &want_dx = ref.dx;
      ASSERT_EQ(dy.size(), static_cast<size_t>(n * out_size));

      const float *w_ih = params.data(), *w_hh = w_ih + G * F, *b_ih = w_hh + G * H,
                  *b_hh = b_ih + G;
      std::vector<float> zx(n * T * G), z(n * G), gates(T * n * G), cells((T + 1) * n * H, 0.0f),
          hidden((T + 1) * n * H, 0.0f), y(dy.size(), -1.0f);
      HostGemm(false, true, n * T, G, F, x.data(), w_ih, zx.data(), false);
      for (int64_t t = 0; t < T; ++t) {
        ASSERT_EQ(LaunchLstmStepInput(sh, n, t, zx.data(), b_ih, b_hh, z.data(), kStream),
                  cudaSuccess);
        HostGemm(false, true, n, G, H, hidden.data() + t * n * H, w_hh, z.data(), true);
        ASSERT_EQ(LaunchLstmStepForward(sh, n, t, z.data(), cells.data() + t * n * H,
                                        hidden.data() + t * n * H, lengths,
                                        gates.data() + t * n * G, cells.data() + (t + 1) * n * H,
                                        hidden.data() + (t + 1) * n * H, y.data(), kStream),
                  cudaSuccess);
      }
      if (!sequences) std::copy(hidden.begin() + T * n * H, hidden.end(), y.begin());
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want_y[i], 1e-5) << i;

      std::vector<float> dh(n * H, 0.0f), dc(n * H, 0.0f), dz(n * G), dz_all(n * T * G),
          grads(params.size()), dx(x.size()), carry(n * H);
      float *dw_ih = grads.data(), *dw_hh = dw_ih + G * F, *db = dw_hh + G * H;
      for (int64_t t = T - 1; t >= 0; --t) {
        ASSERT_EQ(
            LaunchLstmStepBackward(sh, n, t, gates.data() + t * n * G, cells.data() + t * n * H,
                                   cells.data() + (t + 1) * n * H, dy.data(), lengths, dh.data(),
                                   dc.data(), dz.data(), dz_all.data(), carry.data(), kStream),
            cudaSuccess);
        HostGemm(true, false, G, H, n, dz.data(), hidden.data() + t * n * H, dw_hh, t != T - 1);
        HostGemm(false, false, n, H, G, dz.data(), w_hh, dh.data(), false);
        if (lengths) {
          ASSERT_EQ(LaunchLstmCarry(sh, n, t, lengths, carry.data(), dh.data(), kStream),
                    cudaSuccess);
        }
      }
      HostGemm(true, false, G, F, n * T, dz_all.data(), x.data(), dw_ih, false);
      for (int64_t r = 0; r < n * T; ++r)
        for (int64_t j = 0; j < G; ++j) db[j] += dz_all[r * G + j];
      std::copy(db, db + G, db + G);
      HostGemm(false, false, n * T, F, G, dz_all.data(), w_ih, dx.data(), false);
      for (size_t i = 0; i < grads.size(); ++i) EXPECT_NEAR(grads[i], want_grads[i], 1e-4) << i;
      for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], want_dx[i], 1e-5) << i;
    }
}

// The GRU's step kernels composed as gru.cc issues them (its GEMMs on the host, the biases added
// as LaunchBiasAdd adds them), against the CPU layer.
TEST(KernelEmulationTest, GruStepsComposeToTheCpuLayer) {
  const int32_t lengths_of[4] = {6, 3, 0, 5};
  for (const int32_t* lengths : {static_cast<const int32_t*>(nullptr), lengths_of})
    for (const bool sequences : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << (sequences ? "every step" : "last step") << (lengths ? ", lengths" : ""));
      const RecurrentShape sh{6, 3, 5, sequences};
      const int64_t n = 4, T = sh.steps, F = sh.features, H = sh.units, G = 3 * H;
      const int64_t out_size = sequences ? T * H : H;
      const RecurrentReference ref = RunRecurrentReference<cpu::Gru>(sh, n, lengths, 34);
      const std::vector<float>&params = ref.params, &want_grads = ref.grads, &x = ref.x,
            &dy = ref.dy, &want_y = ref.y, &want_dx = ref.dx;
      ASSERT_EQ(dy.size(), static_cast<size_t>(n * out_size));

      const float *w_ih = params.data(), *w_hh = w_ih + G * F, *b_ih = w_hh + G * H,
                  *b_hh = b_ih + G;
      auto add_rows = [](float* m, const float* b, int64_t rows, int64_t width) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < width; ++j) m[r * width + j] += b[j];
      };
      std::vector<float> ax(n * T * G), ah(T * n * G), gates(T * n * G),
          hidden((T + 1) * n * H, 0.0f), y(dy.size(), -1.0f);
      HostGemm(false, true, n * T, G, F, x.data(), w_ih, ax.data(), false);
      add_rows(ax.data(), b_ih, n * T, G);
      for (int64_t t = 0; t < T; ++t) {
        HostGemm(false, true, n, G, H, hidden.data() + t * n * H, w_hh, ah.data() + t * n * G,
                 false);
        add_rows(ah.data() + t * n * G, b_hh, n, G);
        ASSERT_EQ(LaunchGruStepForward(sh, n, t, ax.data(), ah.data() + t * n * G,
                                       hidden.data() + t * n * H, lengths, gates.data() + t * n * G,
                                       hidden.data() + (t + 1) * n * H, y.data(), kStream),
                  cudaSuccess);
      }
      if (!sequences) std::copy(hidden.begin() + T * n * H, hidden.end(), y.begin());
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want_y[i], 1e-5) << i;

      std::vector<float> dh(n * H, 0.0f), direct(n * H), dax(n * T * G), dah(n * G),
          dah_all(n * T * G), grads(params.size()), dx(x.size());
      float *dw_ih = grads.data(), *dw_hh = dw_ih + G * F, *db_ih = dw_hh + G * H,
            *db_hh = db_ih + G;
      for (int64_t t = T - 1; t >= 0; --t) {
        ASSERT_EQ(
            LaunchGruStepBackward(sh, n, t, gates.data() + t * n * G, ah.data() + t * n * G,
                                  hidden.data() + t * n * H, dy.data(), lengths, dh.data(),
                                  direct.data(), dax.data(), dah.data(), dah_all.data(), kStream),
            cudaSuccess);
        HostGemm(true, false, G, H, n, dah.data(), hidden.data() + t * n * H, dw_hh, t != T - 1);
        dh = direct;
        HostGemm(false, false, n, H, G, dah.data(), w_hh, dh.data(), true);
      }
      HostGemm(true, false, G, F, n * T, dax.data(), x.data(), dw_ih, false);
      for (int64_t r = 0; r < n * T; ++r)
        for (int64_t j = 0; j < G; ++j) {
          db_ih[j] += dax[r * G + j];
          db_hh[j] += dah_all[r * G + j];
        }
      HostGemm(false, false, n * T, F, G, dax.data(), w_ih, dx.data(), false);
      for (size_t i = 0; i < grads.size(); ++i) EXPECT_NEAR(grads[i], want_grads[i], 1e-4) << i;
      for (size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(dx[i], want_dx[i], 1e-5) << i;
    }
}

TEST(KernelEmulationTest, GroupNormAndLayerNormMatchCpu) {
  for (const NormGeometry& g : {NormGeometry{6, 8, 4, false}, NormGeometry{5, 7, 1, true}}) {
    SCOPED_TRACE(g.per_position ? "layernorm" : "groupnorm");
    const int64_t n = 3, size = g.positions * g.c;
    cpu::Norm ref(g, n);
    std::vector<float> params = Random(static_cast<size_t>(2 * g.c), 26), want_grads(params.size());
    ref.Bind(params.data(), want_grads.data());
    const auto x = Random(static_cast<size_t>(n * size), 27);
    const auto dy = Random(x.size(), 28);
    std::vector<float> want_y(x.size()), want_dx(x.size()), y(x.size()), dx(x.size());
    ref.Forward(x.data(), want_y.data(), n);
    ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);
    std::vector<float> mean(static_cast<size_t>(n * g.sets())), rstd(mean.size()),
        grads(params.size());
    ASSERT_EQ(LaunchNormForward(g, x.data(), n, params.data(), params.data() + g.c, y.data(),
                                mean.data(), rstd.data(), kStream),
              cudaSuccess);
    ASSERT_EQ(LaunchNormBackward(g, x.data(), dy.data(), n, params.data(), mean.data(), rstd.data(),
                                 grads.data(), grads.data() + g.c, dx.data(), kStream),
              cudaSuccess);
    EXPECT_EQ(y, want_y);  // one arithmetic (train/norm_math.h), the same bits
    EXPECT_EQ(dx, want_dx);
    EXPECT_EQ(grads, want_grads);
  }
}

TEST(KernelEmulationTest, AvgPoolMatchesCpu) {
  // A 2x2 window over 5x6 (a row and no column left over), and global pooling of 3x4.
  for (auto [h, w, k, global] :
       {std::tuple<int64_t, int64_t, int64_t, bool>{5, 6, 2, false}, {3, 4, 0, true}}) {
    const int64_t c = 3, n = 2, kh = global ? h : k, kw = global ? w : k;
    const AvgPoolGeometry g{h, w, c, kh, kw, h / kh, w / kw};
    cpu::AvgPool2D ref(h, w, c, kh, kw);
    const auto x = Random(static_cast<size_t>(n * h * w * c), 24);
    const auto dy = Random(static_cast<size_t>(n * g.oh * g.ow * c), 25);
    std::vector<float> want_y(dy.size()), y(dy.size()), want_dx(x.size()), dx(x.size(), 7.0f);
    ref.Forward(x.data(), want_y.data(), n);
    ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);
    ASSERT_EQ(LaunchAvgPoolForward(x.data(), n, g, y.data(), kStream), cudaSuccess);
    ASSERT_EQ(LaunchAvgPoolBackward(dy.data(), n, g, dx.data(), kStream), cudaSuccess);
    EXPECT_EQ(y, want_y);
    EXPECT_EQ(dx, want_dx);
  }
}

TEST(KernelEmulationTest, SmoothActivationsMatchCpu) {
  const int64_t size = 257, n = 3;
  for (ActivationFn fn : {ActivationFn::kSigmoid, ActivationFn::kTanh, ActivationFn::kGelu}) {
    SCOPED_TRACE(static_cast<int>(fn));
    cpu::Activation ref(fn, size);
    auto x = Random(static_cast<size_t>(n * size), 18);
    for (float& v : x) v *= 4.0f;  // into the tails too
    const auto dy = Random(x.size(), 19);
    std::vector<float> want_y(x.size()), want_dx(x.size()), y(x.size()), dx(x.size());
    ref.Forward(x.data(), want_y.data(), n);
    ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);
    ASSERT_EQ(LaunchActivationForward(static_cast<int>(fn), x.data(), y.data(), n * size, kStream),
              cudaSuccess);
    ASSERT_EQ(LaunchActivationBackward(static_cast<int>(fn), x.data(), y.data(), dy.data(),
                                       dx.data(), n * size, kStream),
              cudaSuccess);
    EXPECT_EQ(y, want_y);  // one formula (train/activation_math.h), the same bits
    EXPECT_EQ(dx, want_dx);
  }
}

// The CUDA Dropout drops the CPU layer's values (one mask: train/dropout_math.h) and scales alike.
TEST(KernelEmulationTest, DropoutMatchesCpu) {
  const int64_t size = 300, n = 5;
  const float rate = 0.45f;
  const uint64_t key = DropoutKey(7, 9, 2);
  cpu::Dropout ref(rate, size);
  ref.BeginBatch(/*training=*/true, key, 0, nullptr);
  const auto x = Random(static_cast<size_t>(n * size), 20);
  const auto dy = Random(x.size(), 21);
  std::vector<float> want_y(x.size()), want_dx(x.size()), y(x.size()), dx(x.size());
  ref.Forward(x.data(), want_y.data(), n);
  ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);
  ASSERT_EQ(LaunchDropout(x.data(), y.data(), size, n, key, rate, kStream), cudaSuccess);
  ASSERT_EQ(LaunchDropout(dy.data(), dx.data(), size, n, key, rate, kStream), cudaSuccess);
  EXPECT_EQ(y, want_y);
  EXPECT_EQ(dx, want_dx);
  EXPECT_GT(std::count(y.begin(), y.end(), 0.0f), 0);
}

// The residual layer's forward and its gradient's accumulation in place (out aliasing a): the CPU
// layer's sums.
TEST(KernelEmulationTest, AddMatchesCpu) {
  const int64_t size = 77, n = 3;
  const auto source = Random(static_cast<size_t>(n * size), 22);
  const auto x = Random(source.size(), 23), dy = Random(source.size(), 24);
  std::vector<float> ref_source_grad(source.size(), 0.25f), source_grad = ref_source_grad;
  cpu::Add ref(size);
  ref.Connect(source.data(), ref_source_grad.data());
  std::vector<float> want_y(x.size()), want_dx(x.size()), y(x.size());
  ref.Forward(x.data(), want_y.data(), n);
  ref.Backward(x.data(), want_y.data(), dy.data(), want_dx.data(), n);
  ASSERT_EQ(LaunchAdd(x.data(), source.data(), y.data(), n * size, kStream), cudaSuccess);
  ASSERT_EQ(LaunchAdd(source_grad.data(), dy.data(), source_grad.data(), n * size, kStream),
            cudaSuccess);
  EXPECT_EQ(y, want_y);
  EXPECT_EQ(source_grad, ref_source_grad);
}

TEST(KernelEmulationTest, BiasAddAndGradient) {
  // One slab, several column blocks, and many slabs (rows > 512) with a ragged last slab.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 70}, {1, 1}, {2000, 33}, {6272, 4}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    const auto m = Random(static_cast<size_t>(rows * cols), 10);
    const auto b = Random(static_cast<size_t>(cols), 11);
    std::vector<float> y = m;
    ASSERT_EQ(LaunchBiasAdd(y.data(), b.data(), rows, cols, kStream), cudaSuccess);
    std::vector<double> sums(static_cast<size_t>(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(y[r * cols + c], m[r * cols + c] + b[c]);
        sums[c] += m[r * cols + c];
      }
    std::vector<float> scratch(static_cast<size_t>(BiasGradScratchSize(rows, cols)), 0.0f);
    std::vector<float> db(static_cast<size_t>(cols), -1.0f);
    ASSERT_EQ(LaunchBiasGrad(m.data(), rows, cols, scratch.data(), db.data(), kStream),
              cudaSuccess);
    for (int64_t c = 0; c < cols; ++c)
      EXPECT_NEAR(db[c], sums[c], 1e-4 * (1 + std::abs(sums[c]))) << "column " << c;
  }
}

TEST(KernelEmulationTest, SoftmaxCrossEntropyMatchesCpu) {
  for (int64_t n : {1, 37, 600}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const int64_t k = 10;
    const auto logits = Random(static_cast<size_t>(n * k), 12, 3.0f);
    std::vector<uint8_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>((i * 7) % k);
    std::vector<float> want_grad(logits.size()), grad(logits.size());
    const StepStats want =
        cpu::SoftmaxCrossEntropy(logits.data(), labels.data(), n, k, want_grad.data(), n);
    LossTotals totals{-1.0, -1};
    ASSERT_EQ(LaunchSoftmaxXent(logits.data(), labels.data(), n, k, grad.data(), &totals, kStream),
              cudaSuccess);
    EXPECT_NEAR(totals.loss_sum, want.loss_sum, 1e-9 * want.loss_sum);
    EXPECT_EQ(totals.correct, want.correct);
    ExpectNear(grad, want_grad, 1e-7f);
    LossTotals no_grad{-1.0, -1};
    ASSERT_EQ(LaunchSoftmaxXent(logits.data(), labels.data(), n, k, nullptr, &no_grad, kStream),
              cudaSuccess);
    EXPECT_EQ(no_grad.loss_sum, totals.loss_sum);
  }
}

// The other losses: the gradient is the CPU's bit for bit (one arithmetic, train/loss_math.h).
TEST(KernelEmulationTest, MeanSquaredErrorAndBinaryCrossEntropyAreTheCpusBits) {
  for (LossKind kind : {LossKind::kMeanSquaredError, LossKind::kBinaryCrossEntropy}) {
    const int64_t n = 37, k = 10;
    const auto logits = Random(static_cast<size_t>(n * k), 14, 3.0f);
    std::vector<uint8_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>((i * 3) % k);
    std::vector<float> want_grad(logits.size()), grad(logits.size());
    const StepStats want =
        cpu::ComputeLoss(kind, logits.data(), labels.data(), n, k, want_grad.data(), n);
    LossTotals totals{-1.0, -1};
    ASSERT_EQ(
        LaunchSoftmaxXent(logits.data(), labels.data(), n, k, grad.data(), &totals, kStream, kind),
        cudaSuccess);
    EXPECT_NEAR(totals.loss_sum, want.loss_sum, 1e-9 * want.loss_sum);
    EXPECT_EQ(totals.correct, want.correct);
    EXPECT_EQ(grad, want_grad) << static_cast<int>(kind);
  }
}

TEST(KernelEmulationTest, SgdMatchesCpuInEveryConfiguration) {
  const size_t n = 1000;
  for (const SgdConfig& cfg :
       {SgdConfig{0.1f, 0.0f, 0.0f, 0.0f}, SgdConfig{0.05f, 0.0f, 1e-3f, 0.0f},
        SgdConfig{0.05f, 0.9f, 0.0f, 0.0f}, SgdConfig{0.02f, 0.9f, 1e-4f, 0.1f}}) {
    for (bool corrected : {false, true}) {  // SCAFFOLD's correction, outside the momentum
      std::vector<float> w = Random(n, 13), anchor = Random(n, 14), v(n, 0.0f);
      const std::vector<float> correction = Random(n, 15);
      const float* corr = corrected ? correction.data() : nullptr;
      std::vector<float> w2 = w, v2 = v;
      for (int step = 0; step < 3; ++step) {
        const auto grad = Random(n, 20 + static_cast<uint64_t>(step));
        SgdUpdate(w.data(), grad.data(), v.data(), anchor.data(), n, cfg, corr);
        const SgdParams p{cfg.lr, cfg.momentum, cfg.weight_decay, cfg.proximal_mu};
        ASSERT_EQ(LaunchSgdUpdate(w2.data(), grad.data(), v2.data(), anchor.data(), corr,
                                  static_cast<int64_t>(n), p, kStream),
                  cudaSuccess);
      }
      ExpectNear(w2, w, 1e-6f);
      ExpectNear(v2, v, 1e-6f);
    }
  }
}

TEST(KernelEmulationTest, AdamMatchesCpuInEveryConfiguration) {
  const size_t n = 1000;
  auto adam = [](OptimizerKind kind, float wd, float mu) {
    SgdConfig c{0.01f, 0.0f, wd, mu};
    c.optimizer = kind;
    return c;
  };
  for (const SgdConfig& cfg :
       {adam(OptimizerKind::kAdam, 0.0f, 0.0f), adam(OptimizerKind::kAdam, 1e-2f, 0.1f),
        adam(OptimizerKind::kAdamW, 1e-2f, 0.0f), adam(OptimizerKind::kAdamW, 0.1f, 0.05f)}) {
    for (bool corrected : {false, true}) {
      std::vector<float> w = Random(n, 31), anchor = Random(n, 32), m(n, 0.0f), v(n, 0.0f);
      const std::vector<float> correction = Random(n, 33);
      const float* corr = corrected ? correction.data() : nullptr;
      std::vector<float> w2 = w, m2 = m, v2 = v;
      for (int64_t step = 1; step <= 3; ++step) {
        const auto grad = Random(n, 40 + static_cast<uint64_t>(step));
        AdamUpdate(w.data(), grad.data(), m.data(), v.data(), anchor.data(), n, cfg, step, corr);
        const AdamParams p = AdamParamsAt(cfg, step);
        ASSERT_EQ(LaunchAdamUpdate(w2.data(), grad.data(), m2.data(), v2.data(), anchor.data(),
                                   corr, static_cast<int64_t>(n), p, kStream),
                  cudaSuccess);
      }
      ExpectNear(w2, w, 1e-6f);
      ExpectNear(m2, m, 1e-6f);
      ExpectNear(v2, v, 1e-6f);
    }
  }
}

}  // namespace
}  // namespace tributary::cuda
