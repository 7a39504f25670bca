// DataConfig: which data set a program uses and how it is split among clients; the data.* keys.
//
// The same keys in every program, so one description of the data serves them all:
//   data.dataset            "fashion-mnist" (Debian's dataset-fashion-mnist, or data.dir) or
//                           "synthetic" (MakeSyntheticDataset: class prototypes plus noise)
//   data.dir                the Fashion-MNIST directory ("": the Debian package's)
//   data.train_examples     use the first N training examples (0: all; synthetic: 60,000)
//   data.test_examples      use the first N test examples (0: all; synthetic: 10,000)
//   data.seed               seeds the partition and the synthetic draw
//   data.synthetic.height, data.synthetic.width, data.synthetic.noise   the synthetic images
// and, where the data is split among clients (the client and the simulator):
//   data.partition          "iid", "dirichlet:ALPHA", "shards:K" (the simulator also takes
//                           "replacement:N"; train/data/partition.h)
//   data.num_clients        how many clients the training set is split among
//
// The synthetic data set is one draw of train_examples + test_examples examples, training set
// first, so every program that uses the same keys gets the same examples.
#pragma once

#include <memory>
#include <string>

#include "core/config_schema.h"
#include "train/data/dataset.h"

namespace tributary {

struct DataConfig {
  std::string dataset = "fashion-mnist";
  std::string dir;
  int64_t train_examples = 0;
  int64_t test_examples = 0;
  uint64_t seed = 1;
  int64_t synthetic_height = 8;
  int64_t synthetic_width = 8;
  double synthetic_noise = 0.4;
  std::string partition = "iid";
  int64_t num_clients = 1;

  // InvalidArgument naming the key when a value is out of range.
  Status Validate() const;
  // The examples' shape (height, width, channels) and class count, known without loading them.
  int64_t height() const { return dataset == "synthetic" ? synthetic_height : 28; }
  int64_t width() const { return dataset == "synthetic" ? synthetic_width : 28; }
  int num_classes() const { return 10; }
};

// Binds the data set keys; with `partitioned` also data.partition and data.num_clients.
void BindDataConfig(ConfigSchema& schema, DataConfig* data, bool partitioned);

struct DataSplits {
  std::shared_ptr<const Dataset> train;  // null when not asked for
  std::shared_ptr<const Dataset> test;   // null when not asked for
};

// Loads the splits asked for (a synthetic data set is drawn whole either way). Errors name the
// data.dataset or data.dir key and, for files, the path.
Result<DataSplits> LoadDataSplits(const DataConfig& config, bool want_train, bool want_test);

}  // namespace tributary
