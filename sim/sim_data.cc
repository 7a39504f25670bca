#include "sim/sim_data.h"

#include "train/data/fashion_mnist.h"
#include "train/data/synthetic.h"

namespace tributary {

Result<SimData> LoadSimData(const SimConfig& c) {
  SimData d;
  if (c.dataset == "fashion-mnist") {
    Result<Dataset> train =
        LoadFashionMnist(c.data_dir, FashionMnistSplit::kTrain, c.train_examples);
    if (!train.ok()) return train.status().WithContext("dataset 'fashion-mnist' (key data_dir)");
    Result<Dataset> test = LoadFashionMnist(c.data_dir, FashionMnistSplit::kTest, c.test_examples);
    if (!test.ok()) return test.status().WithContext("dataset 'fashion-mnist' (key data_dir)");
    d.train = std::make_shared<const Dataset>(std::move(*train));
    d.test = std::make_shared<const Dataset>(std::move(*test));
    return d;
  }
  if (c.dataset == "synthetic") {
    // Train and test share the seed (and so the class prototypes); the test set is the tail of one
    // larger draw so no test example repeats a training one.
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
    d.train = std::make_shared<const Dataset>(all.Subset(head));
    d.test = std::make_shared<const Dataset>(all.Subset(tail));
    return d;
  }
  return Status::InvalidArgument("dataset '" + c.dataset +
                                 "' is unknown; use 'fashion-mnist' or 'synthetic'");
}

}  // namespace tributary
