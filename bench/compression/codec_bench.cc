// Codec pipeline throughput on 1M- and 10M-float updates, in GB/s of dense float32 input (4 bytes
// per model value, whatever the encoded size), next to two memory-bandwidth references measured in
// the same run:
//   ReadBandwidth  sum of the floats (reads 4 bytes per value)
//   Memcpy         copy of the floats (reads 4 + writes 4; reported per input byte)
// For each spec: Encode (with error-feedback state where the spec has it), Validate, and
// DecodeInto a float BufferSink (the coordinator's fixed-point fold is in
// bench/coordinator/aggregation_bench). TopKSelect is the selection alone. The encoded size per
// value is reported as the `bytes_per_value` counter.
//
//   build/<dir>/bench/compression/codec_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/selection.h"
#include "core/rng.h"

namespace tributary {
namespace {

const std::vector<float>& Delta(size_t n) {
  static std::vector<float> d;
  if (d.size() != n) {
    Rng rng(1);
    d.resize(n);
    for (float& v : d) v = static_cast<float>(1e-3 * rng.Normal());
  }
  return d;
}

void SetRate(benchmark::State& state, size_t n) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n * 4));
}

void BM_ReadBandwidth(benchmark::State& state, size_t n) {
  const std::vector<float>& x = Delta(n);
  for (auto _ : state) {
    float acc[8] = {};
    for (size_t i = 0; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
    benchmark::DoNotOptimize(acc);
  }
  SetRate(state, n);
}

void BM_Memcpy(benchmark::State& state, size_t n) {
  const std::vector<float>& x = Delta(n);
  std::vector<float> y(n);
  for (auto _ : state) {
    std::memcpy(y.data(), x.data(), n * 4);
    benchmark::ClobberMemory();
  }
  SetRate(state, n);
}

void BM_TopKSelect(benchmark::State& state, size_t n) {
  const std::vector<float>& x = Delta(n);
  for (auto _ : state) benchmark::DoNotOptimize(TopKIndices(x, n / 100));
  SetRate(state, n);
}

void BM_Encode(benchmark::State& state, const std::string& spec, size_t n) {
  auto codec = *MakeCodec(spec);
  const std::vector<float>& x = Delta(n);
  CodecState cs;
  uint64_t seed = 0;
  size_t bytes = 0;
  (void)codec->Encode(x, &cs, 0);  // allocate the residual (once per client) outside the timing
  for (auto _ : state) {
    Result<std::vector<uint8_t>> out = codec->Encode(x, &cs, ++seed);
    bytes = out->size();
    benchmark::DoNotOptimize(out);
  }
  SetRate(state, n);
  state.counters["bytes_per_value"] = static_cast<double>(bytes) / static_cast<double>(n);
}

void BM_Validate(benchmark::State& state, const std::string& spec, size_t n) {
  auto codec = *MakeCodec(spec);
  const std::vector<uint8_t> bytes = *codec->Encode(Delta(n), nullptr, 1);
  for (auto _ : state) benchmark::DoNotOptimize(codec->Validate(bytes, n));
  SetRate(state, n);
}

void BM_Decode(benchmark::State& state, const std::string& spec, size_t n) {
  auto codec = *MakeCodec(spec);
  const std::vector<uint8_t> bytes = *codec->Encode(Delta(n), nullptr, 1);
  std::vector<float> out(n, 0.0f);
  BufferSink sink(out);
  for (auto _ : state) {
    codec->DecodeInto(bytes, sink, 0.5f);
    benchmark::ClobberMemory();
  }
  SetRate(state, n);
}

}  // namespace
}  // namespace tributary

int main(int argc, char** argv) {
  using namespace tributary;
  benchmark::Initialize(&argc, argv);
  const std::vector<std::string> specs = {"dense", "topk(0.01)", "q8",
                                          "q4",    "sign",       "topk(0.01)+q8+zstd"};
  for (size_t n : {size_t{1} << 20, size_t{10} << 20}) {
    const std::string sz = n == (size_t{1} << 20) ? "1M" : "10M";
    benchmark::RegisterBenchmark(("ReadBandwidth/" + sz).c_str(), BM_ReadBandwidth, n)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Memcpy/" + sz).c_str(), BM_Memcpy, n)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("TopKSelect/" + sz).c_str(), BM_TopKSelect, n)
        ->Unit(benchmark::kMillisecond);
    for (const std::string& s : specs) {
      benchmark::RegisterBenchmark(("Encode/" + s + "/" + sz).c_str(), BM_Encode, s, n)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("Validate/" + s + "/" + sz).c_str(), BM_Validate, s, n)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("Decode/" + s + "/" + sz).c_str(), BM_Decode, s, n)
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
