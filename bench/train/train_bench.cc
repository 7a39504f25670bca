// Training throughput of the CPU engine per model, batch and thread count
// (BM_Train/<model>/<batch>/ <threads>), and the large-GEMM reference the engine's GFLOP/s is
// compared against (the engine's own Gemm, on the instruction set it chose at run time:
// train/cpu/gemm.h). scripts/bench-train runs this next to bench/train/torch_reference.py and
// prints the ratios, and the speedup of 2 threads over 1 measured in the same run.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <numeric>
#include <string_view>

#include "core/check.h"
#include "core/rng.h"
#include "train/cpu/cpu_engine.h"
#include "train/cpu/gemm.h"
#include "train/model_file.h"
#include "train/model_spec.h"

namespace tributary {
namespace {

Dataset RandomData(int64_t n) {
  Dataset d;
  d.name = "random";
  d.height = 28;
  d.width = 28;
  d.channels = 1;
  d.images.resize(n * 784);
  d.labels.resize(n);
  Rng rng(1);
  for (float& v : d.images) v = rng.UniformFloat();
  for (auto& l : d.labels) l = static_cast<uint8_t>(rng.UniformInt(10));
  return d;
}

// Windows of 32 token ids of 97 and the id after each: char_lstm's data.
Dataset RandomTokens(int64_t n) {
  Dataset d;
  d.name = "tokens";
  d.height = d.width = 1;
  d.channels = 32;
  d.num_classes = 97;
  d.images.resize(n * 32);
  d.labels.resize(n);
  Rng rng(1);
  for (float& v : d.images) v = static_cast<float>(rng.UniformInt(97));
  for (auto& l : d.labels) l = static_cast<uint8_t>(rng.UniformInt(97));
  return d;
}

// `model`: a zoo model's name or a model file's path (the reference edge models of
// examples/models/).
void BM_Train(benchmark::State& state, const char* model) {
  const int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const bool text = std::string_view(model).ends_with("char_lstm.toml");
  auto spec =
      text ? *ResolveModelSpec(model, {1, 1, 32}, 97) : *ResolveModelSpec(model, {28, 28, 1}, 10);
  auto engine = *cpu::CpuEngine::Create(spec, batch, threads);
  TRIB_CHECK(engine->LoadWeights(*InitWeights(spec, 1)).ok());
  const int64_t n = 1024;
  Dataset data = text ? RandomTokens(n) : RandomData(n);
  std::vector<uint32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0u);
  SgdConfig sgd{0.01f, 0.0f, 0.0f, 0.0f};
  int64_t pos = 0;
  for (auto _ : state) {
    if (pos + batch > n) pos = 0;
    auto st = engine->TrainStep(data, std::span<const uint32_t>(idx).subspan(pos, batch), sgd);
    benchmark::DoNotOptimize(st.loss_sum);
    pos += batch;
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["GFLOPS"] =
      benchmark::Counter(static_cast<double>(TrainFlopsPerSample(spec)) * batch * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}
// {batch, threads}: every batch on one thread, and batches 32 and 64 on two (real time: the
// second thread's work is not in the main thread's CPU time).
void TrainArgs(benchmark::internal::Benchmark* b) {
  for (int64_t batch : {10, 32, 64}) b->Args({batch, 1});
  for (int64_t batch : {32, 64}) b->Args({batch, 2});
  b->UseRealTime();
}
BENCHMARK_CAPTURE(BM_Train, mlp, "mlp")->Apply(TrainArgs)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Train, cnn, "cnn")->Apply(TrainArgs)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Train, lenet, "lenet")->Apply(TrainArgs)->Unit(benchmark::kMicrosecond);
// The reference edge models (docs/models.md), on 28x28x1: conv1d over 28 steps of 28 channels, and
// the MobileNet-style CNN (depthwise-separable blocks with GroupNorm).
BENCHMARK_CAPTURE(BM_Train, conv1d_recognizer,
                  TRIBUTARY_SOURCE_DIR "/examples/models/conv1d_recognizer.toml")
    ->Apply(TrainArgs)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Train, mobile_cnn, TRIBUTARY_SOURCE_DIR "/examples/models/mobile_cnn.toml")
    ->Apply(TrainArgs)
    ->Unit(benchmark::kMicrosecond);
// The character-level LSTM on windows of 32 token ids.
BENCHMARK_CAPTURE(BM_Train, char_lstm, TRIBUTARY_SOURCE_DIR "/examples/models/char_lstm.toml")
    ->Apply(TrainArgs)
    ->Unit(benchmark::kMicrosecond);

// The ceiling: a large single-threaded SGEMM (n x n x n) through the engine's Gemm.
void BM_EigenGemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  for (auto _ : state) {
    cpu::Gemm(false, false, n, n, n, a.data(), b.data(), c.data(), false);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(cpu::GemmPath());
}
BENCHMARK(BM_EigenGemm)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tributary

BENCHMARK_MAIN();
