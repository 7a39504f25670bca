#include "client/tools/client_data.h"

#include <fmt/format.h>

#include "train/data/data_config.h"
#include "train/data/fashion_mnist.h"
#include "train/data/partition.h"

namespace tributary {

Result<ClientData> LoadClientData(const ClientConfig& o) {
  const int k = static_cast<int>(o.data.num_clients);
  const size_t me = static_cast<size_t>(o.client_index);
  const uint64_t seed = o.data.seed;

  TRIB_ASSIGN_OR_RETURN(DataSplits splits, LoadDataSplits(o.data, true, true));
  std::shared_ptr<const Dataset> train = std::move(splits.train);
  std::shared_ptr<const Dataset> test = std::move(splits.test);  // may be null ("files")

  Result<Partition> parts =
      MakePartition(o.data.partition, train->labels, train->num_classes, k, seed);
  if (!parts.ok())
    return parts.status().WithContext(
        fmt::format("data.partition '{}' over {} training examples for data.num_clients = {}",
                    o.data.partition, train->size(), k));
  ClientData out;
  out.train = std::make_shared<const Dataset>(train->Subset((*parts)[me]));
  if (out.train->size() == 0)
    return Status::InvalidArgument(
        fmt::format("data.client_index {} gets no training examples under data.partition '{}'", me,
                    o.data.partition));

  std::string eval_text = "no evaluation data";
  if (test) {
    if (test->size() < k)
      return Status::InvalidArgument(fmt::format(
          "the test set has {} examples, fewer than data.num_clients = {}", test->size(), k));
    TRIB_ASSIGN_OR_RETURN(Partition eval_parts,
                          PartitionIid(static_cast<size_t>(test->size()), k, seed));
    std::vector<uint32_t> mine = std::move(eval_parts[me]);
    if (o.eval_examples > 0 && static_cast<int64_t>(mine.size()) > o.eval_examples)
      mine.resize(static_cast<size_t>(o.eval_examples));
    out.eval = std::make_shared<const Dataset>(test->Subset(mine));
    eval_text = fmt::format("{} eval", out.eval->size());
  }
  const std::string source = o.data.dataset == "files"       ? o.data.train
                             : o.data.dataset == "synthetic" ? std::string("the synthetic data set")
                             : o.data.dir.empty()            ? std::string(kDefaultFashionMnistDir)
                                                             : o.data.dir;
  out.description = fmt::format("client {} of {} ({}), {} train / {} examples from {}", me, k,
                                o.data.partition, out.train->size(), eval_text, source);
  return out;
}

}  // namespace tributary
