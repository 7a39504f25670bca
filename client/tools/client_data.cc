#include "client/tools/client_data.h"

#include <fmt/format.h>

#include "train/data/data_config.h"
#include "train/data/fashion_mnist.h"
#include "train/data/idx.h"
#include "train/data/partition.h"

namespace tributary {

Result<Dataset> LoadIdxDataset(const std::string& images_path, const std::string& labels_path,
                               int64_t max_examples, int num_classes, const std::string& name) {
  IdxReadOptions opt;
  opt.max_items = static_cast<uint64_t>(std::max<int64_t>(0, max_examples));
  opt.expected_rank = 3;
  TRIB_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path, opt));
  opt.expected_rank = 1;
  TRIB_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path, opt));
  if (images.dims[0] != labels.dims[0])
    return Status::InvalidArgument(fmt::format("{} holds {} images but {} holds {} labels",
                                               images_path, images.dims[0], labels_path,
                                               labels.dims[0]));
  if (images.dims[0] == 0) return Status::InvalidArgument(images_path + ": holds no examples");
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= num_classes)
      return Status::InvalidArgument(fmt::format("{}: label {} of example {} is not < {}",
                                                 labels_path, labels.data[i], i, num_classes));
  }
  Dataset ds;
  ds.name = name;
  ds.height = images.dims[1];
  ds.width = images.dims[2];
  ds.channels = 1;
  ds.num_classes = num_classes;
  ds.images.resize(images.data.size());
  for (size_t i = 0; i < images.data.size(); ++i)
    ds.images[i] = static_cast<float>(images.data[i]) / 255.0f;
  ds.labels = std::move(labels.data);
  return ds;
}

Result<ClientData> LoadClientData(const ClientConfig& o) {
  const int k = static_cast<int>(o.data.num_clients);
  const size_t me = static_cast<size_t>(o.client_index);
  const uint64_t seed = o.data.seed;
  const bool idx = !o.train_images.empty();

  std::shared_ptr<const Dataset> train, test;  // test may stay null
  if (idx) {
    TRIB_ASSIGN_OR_RETURN(Dataset t,
                          LoadIdxDataset(o.train_images, o.train_labels, o.data.train_examples,
                                         kFashionMnistClasses, "idx-train"));
    train = std::make_shared<const Dataset>(std::move(t));
    if (!o.test_images.empty()) {
      TRIB_ASSIGN_OR_RETURN(Dataset e,
                            LoadIdxDataset(o.test_images, o.test_labels, o.data.test_examples,
                                           kFashionMnistClasses, "idx-test"));
      if (e.height != train->height || e.width != train->width)
        return Status::InvalidArgument(fmt::format(
            "data.test_images {} are {}x{} but data.train_images {} are {}x{}", o.test_images,
            e.height, e.width, o.train_images, train->height, train->width));
      test = std::make_shared<const Dataset>(std::move(e));
    }
  } else {
    TRIB_ASSIGN_OR_RETURN(DataSplits splits, LoadDataSplits(o.data, true, true));
    train = std::move(splits.train);
    test = std::move(splits.test);
  }

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
  const std::string source =
      idx ? o.train_images
      : o.data.dataset == "synthetic"
          ? std::string("the synthetic data set")
          : (o.data.dir.empty() ? std::string(kDefaultFashionMnistDir) : o.data.dir);
  out.description = fmt::format("client {} of {} ({}), {} train / {} examples from {}", me, k,
                                o.data.partition, out.train->size(), eval_text, source);
  return out;
}

}  // namespace tributary
