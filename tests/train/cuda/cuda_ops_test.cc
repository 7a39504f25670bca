// Every CUDA op against the CPU reference (train/cpu/), by NMSE <= 1e-5 (ggml's test-backend-ops
// pattern): Dense, Conv2D (one chunk and several), MaxPool2D, ReLU, softmax cross-entropy and the
// SGD update. Skips without a GPU (see cuda_test_util.h).
#include <gtest/gtest.h>

#include "tests/train/cuda/cuda_test_util.h"
#include "train/cpu/conv2d.h"
#include "train/cpu/dense.h"
#include "train/cpu/pointwise.h"
#include "train/cpu/softmax_xent.h"
#include "train/cuda/adam_params.h"
#include "train/cuda/conv2d.h"
#include "train/cuda/dense.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"
#include "train/cuda/pointwise.h"
#include "train/sgd.h"

namespace tributary::cuda {
namespace {

using testing::CudaParamTest;
using testing::CudaTest;
using testing::kNmseTolerance;
using testing::Nmse;
using testing::RandomVector;

// Runs one layer forward and backward on both backends with the same parameters, input and output
// gradient, and compares output, input gradient and parameter gradients.
struct LayerResult {
  std::vector<float> out, grad_in, grads;
};

LayerResult RunCpu(cpu::CpuLayer& layer, const std::vector<float>& params,
                   const std::vector<float>& x, const std::vector<float>& dy, int64_t n,
                   int64_t out_size) {
  LayerResult r;
  std::vector<float> p = params;
  r.grads.assign(params.size(), 0.0f);
  layer.Bind(p.data(), r.grads.data());
  r.out.assign(static_cast<size_t>(n * out_size), 0.0f);
  r.grad_in.assign(x.size(), 0.0f);
  layer.Forward(x.data(), r.out.data(), n);
  layer.Backward(x.data(), r.out.data(), dy.data(), r.grad_in.data(), n);
  return r;
}

LayerResult RunCuda(CudaLayer& layer, const CudaContext& ctx, const std::vector<float>& params,
                    const std::vector<float>& x, const std::vector<float>& dy, int64_t n,
                    int64_t out_size) {
  LayerResult r;
  DeviceBuffer<float> p, g, dx, dout, out, in;
  EXPECT_TRUE(p.Upload(params, ctx.stream()).ok());
  EXPECT_TRUE(g.Allocate(params.size()).ok());
  EXPECT_TRUE(in.Upload(x, ctx.stream()).ok());
  EXPECT_TRUE(dout.Upload(dy, ctx.stream()).ok());
  EXPECT_TRUE(out.Allocate(static_cast<size_t>(n * out_size)).ok());
  EXPECT_TRUE(dx.Allocate(x.size()).ok());
  layer.Bind(p.data(), g.data());
  Status s = layer.Forward(in.data(), out.data(), n);
  EXPECT_TRUE(s.ok()) << s;
  s = layer.Backward(in.data(), out.data(), dout.data(), dx.data(), n);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(out.Download(&r.out, ctx.stream()).ok());
  EXPECT_TRUE(dx.Download(&r.grad_in, ctx.stream()).ok());
  EXPECT_TRUE(g.Download(&r.grads, ctx.stream()).ok());
  return r;
}

void ExpectParity(const LayerResult& got, const LayerResult& ref) {
  EXPECT_LE(Nmse(got.out, ref.out), kNmseTolerance) << "forward output";
  EXPECT_LE(Nmse(got.grad_in, ref.grad_in), kNmseTolerance) << "input gradient";
  if (!ref.grads.empty()) {
    EXPECT_LE(Nmse(got.grads, ref.grads), kNmseTolerance) << "parameter gradient";
  }
}

using CudaDenseTest = CudaTest;

TEST_F(CudaDenseTest, MatchesCpu) {
  for (auto [n, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{7, 33, 5}, {64, 3136, 512}, {1, 200, 10}}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n << " in=" << in << " out=" << out);
    cpu::Dense ref(in, out);
    auto layer = Dense::Create(in, out, n, *ctx_);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const auto params = RandomVector(static_cast<size_t>(ref.num_params()), 1, 0.1f);
    const auto x = RandomVector(static_cast<size_t>(n * in), 2),
               dy = RandomVector(static_cast<size_t>(n * out), 3);
    const LayerResult want = RunCpu(ref, params, x, dy, n, out);
    const LayerResult got = RunCuda(**layer, *ctx_, params, x, dy, n, out);
    ExpectParity(got, want);
  }
}

struct ConvCase {
  int64_t h, w, c, oc, k, p, n;
  int64_t budget_bytes;    // im2col budget on the GPU (small values force several chunks)
  int64_t kw = 0, pw = 0;  // > 0: a k x kw kernel with padding p x pw (Conv1D's: k x 1, pw 0)
  ConvTaps taps() const { return ConvTaps{h, w, c, k, kw > 0 ? kw : k, p, kw > 0 ? pw : p}; }
};

class CudaConvTest : public CudaParamTest<ConvCase> {};

TEST_P(CudaConvTest, MatchesCpu) {
  const ConvCase cc = GetParam();
  const ConvTaps shape = cc.taps();
  const ConvGeometry g =
      ConvGeometry::Of(shape.h, shape.w, shape.c, shape.kh, shape.kw, shape.ph, shape.pw);
  cpu::Conv2D ref(shape, cc.oc, cc.n);
  auto layer = Conv2D::Create(g, cc.oc, cc.n, *ctx_, cc.budget_bytes);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const int64_t in_size = cc.h * cc.w * cc.c, out_size = g.oh * g.ow * cc.oc;
  const auto params = RandomVector(static_cast<size_t>(ref.num_params()), 11, 0.2f);
  const auto x = RandomVector(static_cast<size_t>(cc.n * in_size), 12);
  const auto dy = RandomVector(static_cast<size_t>(cc.n * out_size), 13);
  const LayerResult want = RunCpu(ref, params, x, dy, cc.n, out_size);
  const LayerResult got = RunCuda(**layer, *ctx_, params, x, dy, cc.n, out_size);
  ExpectParity(got, want);
  if (cc.budget_bytes < Conv2D::kDefaultColumnsBudget) {
    EXPECT_LT((*layer)->chunk(), cc.n) << "expected several chunks";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaConvTest,
    ::testing::Values(
        ConvCase{28, 28, 1, 32, 5, 2, 8, Conv2D::kDefaultColumnsBudget},   // cnn conv1
        ConvCase{14, 14, 32, 64, 5, 2, 4, Conv2D::kDefaultColumnsBudget},  // cnn conv2
        ConvCase{9, 7, 3, 4, 3, 0, 3, Conv2D::kDefaultColumnsBudget},      // valid, non-square
        ConvCase{10, 10, 6, 16, 5, 0, 2, Conv2D::kDefaultColumnsBudget},   // lenet conv2
        ConvCase{6, 5, 3, 4, 3, 1, 5, 2 * 30 * 27 * 4},                    // 2 samples a chunk
        ConvCase{64, 1, 9, 16, 5, 2, 4, Conv2D::kDefaultColumnsBudget, 1, 0}));  // Conv1D

struct PoolCase {
  int64_t h, w, c, k, n;
};

class CudaPoolTest : public CudaParamTest<PoolCase> {};

TEST_P(CudaPoolTest, MatchesCpuIncludingTies) {
  const PoolCase pc = GetParam();
  const PoolGeometry g{pc.h, pc.w, pc.c, pc.k, pc.h / pc.k, pc.w / pc.k};
  cpu::MaxPool2D ref(pc.h, pc.w, pc.c, pc.k, pc.n);
  auto layer = MaxPool2D::Create(g, pc.n, *ctx_);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const int64_t in_size = pc.h * pc.w * pc.c, out_size = g.oh * g.ow * pc.c;
  // Values on a coarse grid make ties common; both backends must pick the first maximum.
  auto x = RandomVector(static_cast<size_t>(pc.n * in_size), 21);
  for (float& v : x) v = std::round(v * 2.0f) / 2.0f;
  const auto dy = RandomVector(static_cast<size_t>(pc.n * out_size), 22);
  const LayerResult want = RunCpu(ref, {}, x, dy, pc.n, out_size);
  const LayerResult got = RunCuda(**layer, *ctx_, {}, x, dy, pc.n, out_size);
  EXPECT_EQ(got.out, want.out);
  EXPECT_EQ(got.grad_in, want.grad_in);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaPoolTest,
                         ::testing::Values(PoolCase{28, 28, 32, 2, 4}, PoolCase{7, 8, 3, 2, 3},
                                           PoolCase{10, 11, 2, 3, 2}));

using CudaReluTest = CudaTest;

TEST_F(CudaReluTest, MatchesCpuExactly) {
  const int64_t size = 1000, n = 3;
  cpu::ReLU ref(size);
  ReLU layer(size, *ctx_);
  auto x = RandomVector(static_cast<size_t>(n * size), 31);
  x[0] = 0.0f;  // the kink: both backends pass no gradient through an exact zero
  const auto dy = RandomVector(static_cast<size_t>(n * size), 32);
  const LayerResult want = RunCpu(ref, {}, x, dy, n, size);
  const LayerResult got = RunCuda(layer, *ctx_, {}, x, dy, n, size);
  EXPECT_EQ(got.out, want.out);
  EXPECT_EQ(got.grad_in, want.grad_in);
}

using CudaSoftmaxTest = CudaTest;

TEST_F(CudaSoftmaxTest, LossCorrectAndGradientMatchCpu) {
  for (int64_t n : {1, 37, 1000}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const int64_t k = 10;
    const auto logits = RandomVector(static_cast<size_t>(n * k), 41, 3.0f);
    std::vector<uint8_t> labels(static_cast<size_t>(n));
    Rng rng(42);
    for (auto& l : labels) l = static_cast<uint8_t>(rng.UniformInt(k));
    std::vector<float> want_grad(logits.size());
    const StepStats want =
        cpu::SoftmaxCrossEntropy(logits.data(), labels.data(), n, k, want_grad.data(), n);

    DeviceBuffer<float> d_logits, d_grad;
    DeviceBuffer<uint8_t> d_labels;
    DeviceBuffer<LossTotals> d_totals;
    ASSERT_TRUE(d_logits.Upload(logits, ctx_->stream()).ok());
    ASSERT_TRUE(d_labels.Upload(labels, ctx_->stream()).ok());
    ASSERT_TRUE(d_grad.Allocate(logits.size()).ok());
    ASSERT_TRUE(d_totals.Allocate(1).ok());
    ASSERT_EQ(LaunchSoftmaxXent(d_logits.data(), d_labels.data(), n, k, d_grad.data(),
                                d_totals.data(), ctx_->stream()),
              cudaSuccess);
    std::vector<float> got_grad;
    std::vector<LossTotals> totals;
    ASSERT_TRUE(d_grad.Download(&got_grad, ctx_->stream()).ok());
    ASSERT_TRUE(d_totals.Download(&totals, ctx_->stream()).ok());
    EXPECT_NEAR(totals[0].loss_sum, want.loss_sum, 1e-9 * std::abs(want.loss_sum));
    EXPECT_EQ(totals[0].correct, want.correct);
    EXPECT_LE(Nmse(got_grad, want_grad), kNmseTolerance);
  }
}

using CudaSgdTest = CudaTest;

TEST_F(CudaSgdTest, EveryConfigurationMatchesCpu) {
  const size_t n = 10007;
  for (const SgdConfig& cfg :
       {SgdConfig{0.1f, 0.0f, 0.0f, 0.0f}, SgdConfig{0.05f, 0.0f, 1e-3f, 0.0f},
        SgdConfig{0.05f, 0.9f, 0.0f, 0.0f}, SgdConfig{0.02f, 0.9f, 1e-4f, 0.1f}}) {
    SCOPED_TRACE(::testing::Message() << "lr=" << cfg.lr << " momentum=" << cfg.momentum
                                      << " wd=" << cfg.weight_decay << " mu=" << cfg.proximal_mu);
    std::vector<float> w = RandomVector(n, 51), anchor = RandomVector(n, 52), v(n, 0.0f);
    DeviceBuffer<float> dw, dg, dv, da;
    ASSERT_TRUE(dw.Upload(w, ctx_->stream()).ok());
    ASSERT_TRUE(dv.Upload(v, ctx_->stream()).ok());
    ASSERT_TRUE(da.Upload(anchor, ctx_->stream()).ok());
    for (int step = 0; step < 3; ++step) {
      const auto grad = RandomVector(n, 60 + static_cast<uint64_t>(step));
      SgdUpdate(w.data(), grad.data(), v.data(), anchor.data(), n, cfg);
      ASSERT_TRUE(dg.Upload(grad, ctx_->stream()).ok());
      const SgdParams p{cfg.lr, cfg.momentum, cfg.weight_decay, cfg.proximal_mu};
      ASSERT_EQ(LaunchSgdUpdate(dw.data(), dg.data(), dv.data(), da.data(), nullptr,
                                static_cast<int64_t>(n), p, ctx_->stream()),
                cudaSuccess);
    }
    std::vector<float> got_w, got_v;
    ASSERT_TRUE(dw.Download(&got_w, ctx_->stream()).ok());
    ASSERT_TRUE(dv.Download(&got_v, ctx_->stream()).ok());
    EXPECT_LE(Nmse(got_w, w), kNmseTolerance);
    if (cfg.momentum != 0.0f) {
      EXPECT_LE(Nmse(got_v, v), kNmseTolerance);
    }
  }
}

TEST_F(CudaSgdTest, AdamAndAdamWMatchCpu) {
  const size_t n = 10007;
  for (OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    SgdConfig cfg{0.01f, 0.0f, 1e-2f, 0.0f};
    cfg.optimizer = kind;
    SCOPED_TRACE(kind == OptimizerKind::kAdam ? "adam" : "adamw");
    std::vector<float> w = RandomVector(n, 71), m(n, 0.0f), v(n, 0.0f);
    DeviceBuffer<float> dw, dg, dm, dv;
    ASSERT_TRUE(dw.Upload(w, ctx_->stream()).ok());
    ASSERT_TRUE(dm.Upload(m, ctx_->stream()).ok());
    ASSERT_TRUE(dv.Upload(v, ctx_->stream()).ok());
    for (int64_t step = 1; step <= 3; ++step) {
      const auto grad = RandomVector(n, 80 + static_cast<uint64_t>(step));
      AdamUpdate(w.data(), grad.data(), m.data(), v.data(), nullptr, n, cfg, step);
      ASSERT_TRUE(dg.Upload(grad, ctx_->stream()).ok());
      const AdamParams p = AdamParamsAt(cfg, step);
      ASSERT_EQ(LaunchAdamUpdate(dw.data(), dg.data(), dm.data(), dv.data(), nullptr, nullptr,
                                 static_cast<int64_t>(n), p, ctx_->stream()),
                cudaSuccess);
    }
    std::vector<float> got_w, got_v;
    ASSERT_TRUE(dw.Download(&got_w, ctx_->stream()).ok());
    ASSERT_TRUE(dv.Download(&got_v, ctx_->stream()).ok());
    EXPECT_LE(Nmse(got_w, w), kNmseTolerance);
    EXPECT_LE(Nmse(got_v, v), kNmseTolerance);
  }
}

}  // namespace
}  // namespace tributary::cuda
