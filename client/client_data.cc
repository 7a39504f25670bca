#include "client/client_data.h"

#include <fmt/format.h>

#include "train/data/data_config.h"
#include "train/data/fashion_mnist.h"
#include "train/data/feature_noise.h"
#include "train/data/partition.h"

namespace tributary {

Result<ClientData> LoadClientData(const ClientConfig& o) {
  // An index out of range would read past the partition (Python's load_data raised MemoryError).
  TRIB_RETURN_IF_ERROR(ValidateClientDataKeys(o));
  const int k = static_cast<int>(o.data.num_clients);
  const size_t me = static_cast<size_t>(o.client_index);
  const uint64_t seed = o.data.seed;

  // Only this client's examples are kept: the partition is computed from the labels, and the
  // loader converts just the chosen images (the whole data set is never held as floats).
  int64_t train_total = 0;
  std::vector<uint32_t> train_indices;  // this client's examples, for their feature noise
  SplitChoosers choosers;
  choosers.train = [&](std::span<const uint8_t> labels,
                       int classes) -> Result<std::vector<uint32_t>> {
    train_total = static_cast<int64_t>(labels.size());
    Result<Partition> parts = MakePartition(o.data.partition, labels, classes, k, seed);
    if (!parts.ok())
      return parts.status().WithContext(
          fmt::format("data.partition '{}' over {} training examples for data.num_clients = {}",
                      o.data.partition, labels.size(), k));
    train_indices = (*parts)[me];
    return std::move((*parts)[me]);
  };
  choosers.test = [&](std::span<const uint8_t> labels, int) -> Result<std::vector<uint32_t>> {
    if (static_cast<int64_t>(labels.size()) < k)
      return Status::InvalidArgument(fmt::format(
          "the test set has {} examples, fewer than data.num_clients = {}", labels.size(), k));
    TRIB_ASSIGN_OR_RETURN(Partition eval_parts, PartitionIid(labels.size(), k, seed));
    std::vector<uint32_t> mine = std::move(eval_parts[me]);
    if (o.eval_examples > 0 && static_cast<int64_t>(mine.size()) > o.eval_examples)
      mine.resize(static_cast<size_t>(o.eval_examples));
    return mine;
  };
  TRIB_ASSIGN_OR_RETURN(DataSplits splits, LoadDataSplits(o.data, true, true, choosers));
  ClientData out;
  TRIB_ASSIGN_OR_RETURN(const FeatureNoiseSpec noise, SplitFeatureNoise(o.data.partition));
  const double noise_level = FeatureNoiseLevel(noise.sigma, me, static_cast<uint64_t>(k));
  if (noise_level > 0) {
    auto noisy = std::make_shared<Dataset>(*splits.train);
    TRIB_RETURN_IF_ERROR(AddFeatureNoise(*noisy, train_indices, noise_level, seed, me));
    splits.train = std::move(noisy);
  }
  out.train = std::move(splits.train);
  if (out.train->size() == 0)
    return Status::InvalidArgument(
        fmt::format("data.client_index {} gets no training examples under data.partition '{}' "
                    "(of {})",
                    me, o.data.partition, train_total));
  std::string eval_text = "no evaluation data";
  if (splits.test) {
    out.eval = std::move(splits.test);
    eval_text = fmt::format("{} eval", out.eval->size());
  }
  const std::string source = o.data.dataset == "files"       ? o.data.train
                             : o.data.dataset == "synthetic" ? std::string("the synthetic data set")
                             : o.data.dir.empty()            ? std::string(kDefaultFashionMnistDir)
                                                             : o.data.dir;
  out.description = fmt::format("client {} of {} ({}), {} train / {} examples from {}", me, k,
                                o.data.partition, out.train->size(), eval_text, source);
  if (noise_level > 0)
    out.description += fmt::format("; feature noise of standard deviation {:.4g}", noise_level);
  return out;
}

}  // namespace tributary
