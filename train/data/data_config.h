// DataConfig: which data set a program uses and how it is split among clients; the data.* keys.
//
// The same keys in every program, so one description of the data serves them all:
//   data.dataset            "fashion-mnist" (Debian's dataset-fashion-mnist, or data.dir),
//                           "synthetic" (MakeSyntheticDataset: class prototypes plus noise), or
//                           "files" (the user's own files, below)
//   data.dir                the Fashion-MNIST directory ("": the Debian package's)
//   data.train_examples     use the first N training examples (0: all; synthetic: 60,000)
//   data.test_examples      use the first N test examples (0: all; synthetic: 10,000)
//   data.seed               seeds the partition and the synthetic draw
//   data.synthetic.height, data.synthetic.width, data.synthetic.noise   the synthetic images
// For "files" (train/data/file_dataset.h has the formats and how arrays become examples):
//   data.train, data.test   the training and the test data: a .npz, a .csv, a .npy of features,
//                           or IDX images (.idx, ...ubyte, .gz); "" for none
//   data.train_labels, data.test_labels   the labels of a .npy or IDX (a second file of the
//                           same format); must be "" for .npz and .csv
//   data.format             "" (by file name) or npz, npy, csv, idx for every file
//   data.npz.features, data.npz.labels    the arrays of a .npz ("x" and "y")
//   data.csv.label_column   the label column of a CSV: a name or a 0-based index ("": the
//                           column named "label", else the last)
//   data.num_classes        the class count (0: the largest label in data.train and data.test,
//                           plus one); at most 256
// and, where the data is split among clients (the client and the simulator):
//   data.partition          "iid", "dirichlet:ALPHA", "shards:K", "labels:K", "quantity:BETA",
//                           each may end in "+noise:SIGMA" (the simulator also takes
//                           "replacement:N"; train/data/partition.h, feature_noise.h)
//   data.num_clients        how many clients the training set is split among
//
// The synthetic data set is one draw of train_examples + test_examples examples, training set
// first, so every program that uses the same keys gets the same examples. A "files" data set's
// training and test examples must have the same shape; with data.num_classes = 0 both splits'
// labels count, whichever split a program loads, so programs with the same keys agree on it.
#pragma once

#include <memory>
#include <string>

#include "core/config_schema.h"
#include "train/data/dataset.h"

namespace tributary {

struct DataConfig {
  std::string dataset = "fashion-mnist";
  std::string dir{};
  int64_t train_examples = 0;
  int64_t test_examples = 0;
  uint64_t seed = 1;
  int64_t synthetic_height = 8;
  int64_t synthetic_width = 8;
  double synthetic_noise = 0.4;
  std::string train{}, train_labels{}, test{}, test_labels{};  // "files"
  std::string format{};
  std::string npz_features = "x";
  std::string npz_labels = "y";
  std::string csv_label_column{};
  int64_t num_classes = 0;
  std::string partition = "iid";
  int64_t num_clients = 1;

  // InvalidArgument naming the key when a value is out of range, or when the "files" keys do not
  // fit together (labels files where the format has none, or none where it needs them).
  Status Validate() const;
};

// Binds the data set keys; with `partitioned` also data.partition and data.num_clients.
void BindDataConfig(ConfigSchema& schema, DataConfig* data, bool partitioned);

struct DataSplits {
  std::shared_ptr<const Dataset> train;  // null when not asked for
  std::shared_ptr<const Dataset> test;   // null when not asked for
};

// Loads the splits asked for (a synthetic data set is drawn whole either way). A "files" data set
// needs data.train when the training split is asked for; its test split is null when data.test is
// "". Errors name the key (data.dataset, data.dir, data.train, ...) and, for files, the path.
Result<DataSplits> LoadDataSplits(const DataConfig& config, bool want_train, bool want_test);

// The same, keeping of each split only the examples its chooser picks (dataset.h; a null chooser
// keeps the whole split). Fashion-MNIST converts only the chosen images; the other data sets are
// loaded whole and then cut to the chosen examples.
struct SplitChoosers {
  ExampleChooser train;
  ExampleChooser test;
};
Result<DataSplits> LoadDataSplits(const DataConfig& config, bool want_train, bool want_test,
                                  const SplitChoosers& choosers);

// What a model for the data set takes: the shape of one example and the number of classes.
struct DataShape {
  int64_t height = 0, width = 0, channels = 1;
  int num_classes = 0;
};

// The data set's DataShape, reading as little as it can: nothing for "fashion-mnist" and
// "synthetic"; for "files" the header of data.train's features (else data.test's), and, when
// data.num_classes is 0, the labels of both. Errors as for LoadDataSplits.
Result<DataShape> DataShapeOf(const DataConfig& config);

}  // namespace tributary
