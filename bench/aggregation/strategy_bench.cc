// Aggregation throughput of every strategy: one whole round (BeginRound, n x Accumulate of a dense
// update of d = 200,000 floats, Finalize) for n = 10, 100 and 1,000 updates.
//   items_per_second = updates aggregated per second
//   bytes_per_second = update input consumed per second (n * d * 4 bytes per round)
// The byzantine budget f of krum, multikrum and bulyan is n / 10. Updates are 32 distinct random
// vectors, each written with its own scale (1 + i / n), so all n differ without holding n inputs.
// Robust rules run with their default thread count (one per core).
//
//   build/<dir>/bench/aggregation/strategy_bench --benchmark_filter=median
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "aggregation/strategy_factory.h"
#include "core/rng.h"

namespace tributary {
namespace {

constexpr size_t kDim = 200000;
constexpr size_t kDistinct = 32;

const std::vector<std::vector<float>>& Bases() {
  static const std::vector<std::vector<float>> bases = [] {
    Rng rng(2024);
    std::vector<std::vector<float>> b(kDistinct, std::vector<float>(kDim));
    for (auto& v : b)
      for (float& f : v) f = static_cast<float>(rng.Normal() * 0.01);
    return b;
  }();
  return bases;
}

// "#" is replaced by f = n / 10.
const char* const kSpecs[] = {
    "fedavg",      "fedavgm",
    "fedadam",     "clip(norm=1)+fedavg",
    "median",      "trimmed_mean(beta=0.1)",
    "krum(f=#)",   "multikrum(f=#)",
    "bulyan(f=#)",
};

std::string SpecFor(size_t rule, size_t n) {
  std::string s = kSpecs[rule];
  if (size_t p = s.find('#'); p != std::string::npos) s.replace(p, 1, std::to_string(n / 10));
  return s;
}

void BM_Round(benchmark::State& state) {
  const size_t rule = static_cast<size_t>(state.range(0));
  const size_t n = static_cast<size_t>(state.range(1));
  const std::string spec = SpecFor(rule, n);
  state.SetLabel(spec);
  auto strategy = MakeStrategy(spec);
  if (!strategy.ok()) return state.SkipWithError(strategy.status().ToString().c_str());
  Strategy& s = **strategy;
  const auto& bases = Bases();
  ModelWeights global = *ModelWeights::Create({{"w", {static_cast<int64_t>(kDim)}}});
  for (auto _ : state) {
    if (Status st = s.BeginRound(global); !st.ok())
      return state.SkipWithError(st.ToString().c_str());
    for (size_t i = 0; i < n; ++i) {
      const std::vector<float>& base = bases[i % kDistinct];
      const float factor = 1.0f + static_cast<float>(i) / static_cast<float>(n);
      Status st = s.Accumulate(
          100.0, [&](UpdateSink& sink, float scale) { sink.AddDense(0, base, scale * factor); });
      if (!st.ok()) return state.SkipWithError(st.ToString().c_str());
    }
    Result<ModelWeights> next = s.Finalize();
    if (!next.ok()) return state.SkipWithError(next.status().ToString().c_str());
    benchmark::DoNotOptimize(next->data().data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * kDim * sizeof(float)));
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t rule = 0; rule < static_cast<int64_t>(std::size(kSpecs)); ++rule)
    for (int64_t n : {10, 100, 1000}) b->Args({rule, n});
}

BENCHMARK(BM_Round)
    ->Apply(Args)
    ->ArgNames({"rule", "n"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tributary

BENCHMARK_MAIN();
