#include "train/data/feature_noise.h"

#include <cmath>

#include <fmt/format.h>

#include "core/parse_number.h"
#include "core/rng.h"

namespace tributary {
namespace {

constexpr uint64_t kStreamFeatureNoise = 6;  // after partition.cc's streams
constexpr std::string_view kNoise = "noise:";

}  // namespace

Result<FeatureNoiseSpec> SplitFeatureNoise(std::string_view spec) {
  FeatureNoiseSpec out;
  std::string_view noise;
  if (spec.starts_with(kNoise)) {
    out.base = "iid";
    noise = spec.substr(kNoise.size());
  } else if (const size_t plus = spec.find("+noise:"); plus != std::string_view::npos) {
    out.base = spec.substr(0, plus);
    noise = spec.substr(plus + 1 + kNoise.size());
  } else {
    out.base = spec;
    return out;
  }
  const std::optional<double> sigma = ParseWhole<double>(noise);
  if (sigma) out.sigma = *sigma;
  if (!sigma || out.sigma < 0)
    return Status::InvalidArgument(
        fmt::format("partition spec '{}': expected noise:SIGMA with a finite number SIGMA >= 0 "
                    "(the last client's noise standard deviation), e.g. iid+noise:0.1",
                    spec));
  return out;
}

double FeatureNoiseLevel(double sigma, uint64_t client, uint64_t num_clients) {
  if (num_clients <= 1) return sigma;
  return sigma / static_cast<double>(num_clients - 1) * static_cast<double>(client);
}

Status AddFeatureNoise(Dataset& data, std::span<const uint32_t> indices, double level,
                       uint64_t seed, uint64_t client) {
  if (static_cast<int64_t>(indices.size()) != data.size())
    return Status::InvalidArgument(fmt::format(
        "feature noise: {} example indices for a data set of {}", indices.size(), data.size()));
  if (level == 0.0) return Status::Ok();
  const int64_t n = data.sample_size();
  for (size_t j = 0; j < indices.size(); ++j) {
    Rng rng = Rng::Stream(seed, {kStreamFeatureNoise, client, indices[j]});
    float* x = data.images.data() + static_cast<int64_t>(j) * n;
    for (int64_t f = 0; f < n; ++f) x[f] += static_cast<float>(level * rng.Normal());
  }
  return Status::Ok();
}

}  // namespace tributary
