#include "sim/population.h"

#include <fmt/format.h>

#include "core/parse_number.h"
#include "core/rng.h"
#include "train/data/feature_noise.h"
#include "train/data/partition.h"

namespace tributary {
namespace {

constexpr uint64_t kDrawStream = 0xd7a3;
constexpr std::string_view kIdPrefix = "client-";
constexpr std::string_view kReplacement = "replacement:";

}  // namespace

Result<std::unique_ptr<Population>> Population::Create(std::shared_ptr<const Dataset> train,
                                                       const std::string& full_spec,
                                                       int64_t num_clients, uint64_t seed) {
  if (!train || train->size() == 0)
    return Status::InvalidArgument("population: the training set is empty");
  if (num_clients < 1 || num_clients > (int64_t{1} << 31))
    return Status::InvalidArgument(fmt::format("clients = {} must be in [1, 2^31]", num_clients));
  std::unique_ptr<Population> p(new Population());
  p->train_ = train;
  p->num_clients_ = static_cast<uint64_t>(num_clients);
  p->seed_ = seed;
  TRIB_ASSIGN_OR_RETURN(const FeatureNoiseSpec noise, SplitFeatureNoise(full_spec));
  p->noise_sigma_ = noise.sigma;
  const std::string spec(noise.base);
  if (spec.rfind(kReplacement, 0) == 0) {
    const std::string n = spec.substr(kReplacement.size());
    const int64_t v = ParseWhole<int64_t>(n).value_or(0);
    if (v < 1 || v > train->size())
      return Status::InvalidArgument(
          fmt::format("partition '{}': N must be an integer in [1, {}] (the training examples)",
                      spec, train->size()));
    p->draw_per_client_ = v;
    return p;
  }
  if (num_clients > train->size())
    return Status::InvalidArgument(fmt::format(
        "partition '{}' cannot split {} examples among {} clients; use 'replacement:N' for "
        "populations larger than the data set",
        spec, train->size(), num_clients));
  Result<Partition> parts = MakePartition(full_spec, train->labels, train->num_classes,
                                          static_cast<int>(num_clients), seed);
  if (!parts.ok()) return parts.status().WithContext("partition '" + full_spec + "'");
  p->offsets_.reserve(parts->size() + 1);
  p->offsets_.push_back(0);
  for (const auto& part : *parts) {
    p->flat_.insert(p->flat_.end(), part.begin(), part.end());
    p->offsets_.push_back(p->flat_.size());
  }
  return p;
}

std::string Population::ClientId(uint64_t index) { return fmt::format("client-{}", index); }

std::optional<uint64_t> Population::IndexOf(const std::string& id) {
  if (id.size() <= kIdPrefix.size() || id.compare(0, kIdPrefix.size(), kIdPrefix) != 0)
    return std::nullopt;
  return ParseWhole<uint64_t>(std::string_view(id).substr(kIdPrefix.size()));
}

uint64_t Population::num_examples(uint64_t c) const {
  if (draw_per_client_ > 0) return static_cast<uint64_t>(draw_per_client_);
  return offsets_[c + 1] - offsets_[c];
}

std::vector<uint32_t> Population::Indices(uint64_t c) const {
  if (draw_per_client_ > 0) {
    Rng rng = Rng::Stream(seed_, {kDrawStream, c});
    std::vector<uint32_t> out(static_cast<size_t>(draw_per_client_));
    for (uint32_t& i : out) i = static_cast<uint32_t>(rng.UniformInt(train_->labels.size()));
    return out;
  }
  return std::vector<uint32_t>(flat_.begin() + static_cast<ptrdiff_t>(offsets_[c]),
                               flat_.begin() + static_cast<ptrdiff_t>(offsets_[c + 1]));
}

Dataset Population::Materialize(uint64_t c) const {
  const std::vector<uint32_t> indices = Indices(c);
  Dataset d = train_->Subset(indices);
  // Cannot fail: the subset has one example per index.
  (void)AddFeatureNoise(d, indices, noise_level(c), seed_, c);
  return d;
}

std::optional<PartitionStats> Population::Stats(uint64_t max_clients) const {
  if (draw_per_client_ > 0 || num_clients_ > max_clients) return std::nullopt;
  Partition parts(num_clients_);
  for (uint64_t c = 0; c < num_clients_; ++c) parts[c] = Indices(c);
  return ComputePartitionStats(parts, train_->labels, train_->num_classes);
}

double Population::noise_level(uint64_t c) const {
  return FeatureNoiseLevel(noise_sigma_, c, num_clients_);
}

double Population::bytes_per_client() const {
  if (draw_per_client_ > 0) return 0.0;
  return static_cast<double>(offsets_.capacity() * sizeof(uint64_t)) /
         static_cast<double>(num_clients_);
}

}  // namespace tributary
