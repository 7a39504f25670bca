#include "train/data/data_config.h"

#include <fmt/format.h>

#include <cmath>

#include "train/data/fashion_mnist.h"
#include "train/data/synthetic.h"

namespace tributary {

void BindDataConfig(ConfigSchema& s, DataConfig* d, bool partitioned) {
  s.Bind("data.dataset", &d->dataset, "\"fashion-mnist\" or \"synthetic\"").Flag("--dataset");
  s.Bind("data.dir", &d->dir, "Fashion-MNIST directory (\"\": Debian's dataset-fashion-mnist)")
      .Flag("--data");
  s.Bind("data.train_examples", &d->train_examples,
         "use the first N training examples (0: all; synthetic: 60000)")
      .Flag("--train-examples");
  s.Bind("data.test_examples", &d->test_examples,
         "use the first N test examples (0: all; synthetic: 10000)");
  s.Bind("data.seed", &d->seed, "seeds the partition and the synthetic data set")
      .Flag("--data-seed");
  s.Bind("data.synthetic.height", &d->synthetic_height, "synthetic image height");
  s.Bind("data.synthetic.width", &d->synthetic_width, "synthetic image width");
  s.Bind("data.synthetic.noise", &d->synthetic_noise, "synthetic per-pixel noise (std. dev.)");
  if (!partitioned) return;
  s.Bind("data.partition", &d->partition,
         "how the training set is split: iid, dirichlet:A, shards:K")
      .Flag("--partition");
  s.Bind("data.num_clients", &d->num_clients, "clients the training set is split among")
      .Flag("--num-clients");
}

Status DataConfig::Validate() const {
  auto bad = [](const char* key, const std::string& why) {
    return Status::InvalidArgument(fmt::format("key '{}' {}", key, why));
  };
  if (dataset != "fashion-mnist" && dataset != "synthetic")
    return bad("data.dataset",
               "= '" + dataset + "' is unknown; use 'fashion-mnist' or 'synthetic'");
  if (train_examples < 0) return bad("data.train_examples", "must be >= 0 (0: all)");
  if (test_examples < 0) return bad("data.test_examples", "must be >= 0 (0: all)");
  if (synthetic_height < 1 || synthetic_width < 1 || synthetic_height * synthetic_width > 4096)
    return bad("data.synthetic.height",
               "and data.synthetic.width must be >= 1 with at most 4096 pixels");
  if (!(synthetic_noise >= 0.0) || !std::isfinite(synthetic_noise))
    return bad("data.synthetic.noise", "must be >= 0");
  if (num_clients < 1)
    return bad("data.num_clients", fmt::format("= {} must be >= 1", num_clients));
  return Status::Ok();
}

Result<DataSplits> LoadDataSplits(const DataConfig& c, bool want_train, bool want_test) {
  TRIB_RETURN_IF_ERROR(c.Validate());
  DataSplits d;
  if (c.dataset == "fashion-mnist") {
    for (const bool train : {true, false}) {
      if (train ? !want_train : !want_test) continue;
      Result<Dataset> ds =
          LoadFashionMnist(c.dir, train ? FashionMnistSplit::kTrain : FashionMnistSplit::kTest,
                           train ? c.train_examples : c.test_examples);
      if (!ds.ok()) return ds.status().WithContext("data.dataset 'fashion-mnist' (key data.dir)");
      (train ? d.train : d.test) = std::make_shared<const Dataset>(std::move(*ds));
    }
    return d;
  }
  // Synthetic: train and test share the class prototypes; the test set is the tail of one
  // larger draw, so no test example repeats a training one.
  SyntheticSpec s;
  const int64_t n_train = c.train_examples > 0 ? c.train_examples : 60000;
  const int64_t n_test = c.test_examples > 0 ? c.test_examples : 10000;
  s.n = n_train + n_test;
  s.height = c.synthetic_height;
  s.width = c.synthetic_width;
  s.noise = static_cast<float>(c.synthetic_noise);
  s.seed = c.seed;
  Dataset all = MakeSyntheticDataset(s);
  std::vector<uint32_t> head(static_cast<size_t>(n_train)), tail(static_cast<size_t>(n_test));
  for (size_t i = 0; i < head.size(); ++i) head[i] = static_cast<uint32_t>(i);
  for (size_t i = 0; i < tail.size(); ++i) tail[i] = static_cast<uint32_t>(head.size() + i);
  if (want_train) d.train = std::make_shared<const Dataset>(all.Subset(head));
  if (want_test) d.test = std::make_shared<const Dataset>(all.Subset(tail));
  return d;
}

}  // namespace tributary
