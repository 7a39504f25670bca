// The coordinator's per-update cost: validate + decode + fold of a dense update into FedAvg's
// fixed-point accumulator, next to a plain float axpy over the same sizes (the memory-bandwidth
// reference measured in the same run). Bytes/s counts the memory each loop must touch:
//   axpy  y += a*x  (float):              4 read x + 4 read y + 4 write y = 12 bytes per element
//   fold  acc += k*x (the int64 lane of FixedPointSum): 4 read x + 8 read acc + 8 write acc = 20
//   bytes per element
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "aggregation/fedavg.h"
#include "compression/dense_codec.h"

namespace tributary {
namespace {

std::vector<float> Delta(size_t n) {
  std::vector<float> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = 1e-3f * std::sin(static_cast<float>(i));
  return d;
}

void BM_Axpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> x = Delta(n), y(n, 0.0f);
  for (auto _ : state) {
    float* __restrict yp = y.data();
    const float* __restrict xp = x.data();
    for (size_t i = 0; i < n; ++i) yp[i] += 0.5f * xp[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 12));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_FixedPointFold(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<float> x = Delta(n);
  FixedPointSum acc;
  acc.Reset(n);
  FixedPointSink sink(acc, 600);
  for (auto _ : state) {
    sink.AddDense(0, x, 1.0f);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 20));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

// A dense update of n floats and a FedAvg round of that model to fold it into.
struct DenseFedAvg {
  explicit DenseFedAvg(size_t n) : bytes(*codec.Encode(Delta(n))) {
    (void)avg.BeginRound(*ModelWeights::Create({{"w", {static_cast<int64_t>(n)}}}));
  }
  DenseCodec codec;
  std::vector<uint8_t> bytes;
  FedAvg avg;
};

// One whole coordinator-side update: Validate (size, finiteness, range) + DecodeInto the FedAvg
// accumulator, the two passes the engines took before TakeUpdate's one. items_per_second is
// updates per second on one core.
void BM_ValidateDecodeFold(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  DenseFedAvg f(n);
  DenseCodec& codec = f.codec;
  const std::vector<uint8_t>& bytes = f.bytes;
  FedAvg& avg = f.avg;
  for (auto _ : state) {
    auto stats = codec.Validate(bytes, n);
    benchmark::DoNotOptimize(stats);
    (void)avg.Accumulate(
        600.0, [&](UpdateSink& sink, float scale) { codec.DecodeInto(bytes, sink, scale); });
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 4));
}

// What the engines do with a dense update for FedAvg now (coordinator/update_check.h's
// TakeUpdate): validation and fold in one pass over the bytes (Strategy::AccumulateDense).
void BM_ValidateFoldOnePass(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  DenseFedAvg f(n);
  for (auto _ : state) {
    Status s = f.avg.AccumulateDense(600, f.bytes, 1.0f);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 4));
}

// The two passes of BM_ValidateDecodeFold apart: the codec's Validate alone (finiteness and the
// largest magnitude), and the decode + fold alone.
void BM_DenseValidate(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  DenseCodec codec;
  std::vector<uint8_t> bytes = *codec.Encode(Delta(n));
  for (auto _ : state) {
    auto stats = codec.Validate(bytes, n);
    benchmark::DoNotOptimize(stats);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 4));
}

void BM_DenseDecodeFold(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  DenseCodec codec;
  std::vector<uint8_t> bytes = *codec.Encode(Delta(n));
  FixedPointSum acc;
  acc.Reset(n);
  for (auto _ : state) {
    FixedPointSink sink(acc, 600);
    codec.DecodeInto(bytes, sink, 1.0f);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 20));
}

// 199,210 floats is the mlp model; 10M a large model.
BENCHMARK(BM_Axpy)->Arg(199210)->Arg(10'000'000);
BENCHMARK(BM_FixedPointFold)->Arg(199210)->Arg(10'000'000);
BENCHMARK(BM_DenseValidate)->Arg(199210)->Arg(10'000'000);
BENCHMARK(BM_DenseDecodeFold)->Arg(199210)->Arg(10'000'000);
BENCHMARK(BM_ValidateDecodeFold)->Arg(199210)->Arg(10'000'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ValidateFoldOnePass)->Arg(199210)->Arg(10'000'000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tributary

BENCHMARK_MAIN();
