// Training throughput (samples/s) of the CUDA engine and of the CPU engine (one thread), per model
// and batch, on random 28x28x1 data. scripts/gpu-check runs it next to torch_cuda_reference.py and
// prints the ratios (bench/train/cuda/compare_gpu.py).
//
// Each CUDA iteration is a whole TrainStep: gather on the device, forward, backward, SGD, and the
// read-back of the loss (one synchronization per step, as a trainer needs). Times are wall-clock
// (UseRealTime), since a GPU step costs little CPU time. Without a GPU the CUDA
// benchmarks report an error naming why, and the CPU ones still run.
#include <benchmark/benchmark.h>

#include <numeric>

#include "core/check.h"
#include "core/rng.h"
#include "train/cuda/cuda_api.h"
#include "train/device.h"

namespace tributary {
namespace {

const Dataset& RandomData() {
  static const Dataset data = [] {
    Dataset d;
    d.name = "random";
    d.height = 28;
    d.width = 28;
    d.channels = 1;
    const int64_t n = 4096;
    d.images.resize(static_cast<size_t>(n * 784));
    d.labels.resize(static_cast<size_t>(n));
    Rng rng(1);
    for (float& v : d.images) v = rng.UniformFloat();
    for (auto& l : d.labels) l = static_cast<uint8_t>(rng.UniformInt(10));
    return d;
  }();
  return data;
}

void BM_Train(benchmark::State& state, const char* backend, const char* model) {
  const int64_t batch = state.range(0);
  const ModelSpec spec = *ModelSpecByName(model);
  const bool cuda = std::string_view(backend) == "cuda";
  if (cuda && !QueryCuda().available()) {
    state.SkipWithError(("no CUDA device: " + QueryCuda().unavailable_reason).c_str());
    return;
  }
  auto engine = cuda ? CreateCudaEngine(spec, batch, 0) : CreateCpuEngine(spec, batch);
  if (!engine.ok()) {
    state.SkipWithError(engine.status().ToString().c_str());
    return;
  }
  TRIB_CHECK((*engine)->LoadWeights(*InitWeights(spec, 1)).ok());
  const Dataset& data = RandomData();
  std::vector<uint32_t> idx(static_cast<size_t>(data.size()));
  std::iota(idx.begin(), idx.end(), 0u);
  Rng rng(2);
  rng.Shuffle(std::span<uint32_t>(idx));
  const SgdConfig sgd{0.01f, 0.0f, 0.0f, 0.0f};
  // Warm-up outside the timing: the CUDA engine uploads the dataset on its first step, and cuBLAS
  // picks its kernels on first use.
  for (int i = 0; i < 3; ++i)
    (*engine)->TrainStep(data, std::span<const uint32_t>(idx).subspan(0, batch), sgd);
  int64_t pos = 0;
  for (auto _ : state) {
    if (pos + batch > data.size()) pos = 0;
    const StepStats st =
        (*engine)->TrainStep(data, std::span<const uint32_t>(idx).subspan(pos, batch), sgd);
    benchmark::DoNotOptimize(st.loss_sum);
    pos += batch;
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.SetLabel((*engine)->device_name());
  state.counters["GFLOPS"] =
      benchmark::Counter(static_cast<double>(TrainFlopsPerSample(spec)) * batch * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Train, cuda_cnn, "cuda", "cnn")
    ->Arg(64)
    ->Arg(32)
    ->Arg(256)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Train, cuda_mlp, "cuda", "mlp")
    ->Arg(64)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Train, cuda_lenet, "cuda", "lenet")
    ->Arg(64)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Train, cpu_cnn, "cpu", "cnn")
    ->Arg(64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tributary

BENCHMARK_MAIN();
