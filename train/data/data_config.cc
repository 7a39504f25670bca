#include "train/data/data_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "train/data/fashion_mnist.h"
#include "train/data/file_dataset.h"
#include "train/data/synthetic.h"

namespace tributary {

void BindDataConfig(ConfigSchema& s, DataConfig* d, bool partitioned) {
  s.Bind("data.dataset", &d->dataset,
         "\"fashion-mnist\", \"synthetic\" or \"files\" (data.train and data.test)")
      .Flag("--dataset");
  s.Bind("data.dir", &d->dir, "Fashion-MNIST directory (\"\": Debian's dataset-fashion-mnist)")
      .Flag("--data")
      .Path();
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
  s.Bind("data.train", &d->train,
         "files: the training data, a .npz, .csv, .npy of features or IDX images")
      .Flag("--train-data")
      .Path();
  s.Bind("data.train_labels", &d->train_labels, "files: the labels of a .npy or IDX data.train")
      .Flag("--train-labels")
      .Path();
  s.Bind("data.test", &d->test, "files: the test data, as data.train (\"\": none)")
      .Flag("--test-data")
      .Path();
  s.Bind("data.test_labels", &d->test_labels, "files: the labels of a .npy or IDX data.test")
      .Flag("--test-labels")
      .Path();
  s.Bind("data.format", &d->format,
         "files: npz, npy, csv or idx for every file (\"\": by the file names)");
  s.Bind("data.npz.features", &d->npz_features, "files: the array of features in a .npz");
  s.Bind("data.npz.labels", &d->npz_labels, "files: the array of labels in a .npz");
  s.Bind("data.csv.label_column", &d->csv_label_column,
         "files: a CSV's label column, a name or 0-based index (\"\": \"label\", else the last)");
  s.Bind("data.num_classes", &d->num_classes,
         "files: the number of classes, at most 256 (0: the largest label plus one)")
      .Flag("--num-classes");
  // tributary-client's IDX keys of earlier versions; their labels keys kept their names.
  s.Rename("data.train_images", "data.train");
  s.Rename("data.test_images", "data.test");
  if (!partitioned) return;
  s.Bind("data.partition", &d->partition,
         "how the training set is split: iid, dirichlet:A, shards:K, labels:K, quantity:B, each "
         "with +noise:S")
      .Flag("--partition");
  s.Bind("data.num_clients", &d->num_clients, "clients the training set is split among")
      .Flag("--num-clients");
}

namespace {

// The "files" keys: each meaningful only with data.dataset = "files", and fitting together.
Status ValidateFiles(const DataConfig& c) {
  if (c.num_classes < 0 || c.num_classes > 256)
    return KeyError("data.num_classes",
                    fmt::format("= {} must be in [0, 256] (0: from the labels)", c.num_classes));
  if (!c.format.empty() && !DataFileFormat("", c.format).ok())
    return KeyError("data.format",
                    fmt::format("= '{}' is unknown; use npz, npy, csv or idx (\"\": by "
                                "the file names)",
                                c.format));
  if (c.dataset != "files") {
    const std::pair<const char*, const std::string*> paths[] = {
        {"data.train", &c.train},
        {"data.train_labels", &c.train_labels},
        {"data.test", &c.test},
        {"data.test_labels", &c.test_labels},
        {"data.format", &c.format}};
    for (const auto& [key, value] : paths)
      if (!value->empty())
        return KeyError(
            key, fmt::format("= '{}' is for data.dataset = 'files', not '{}'", *value, c.dataset));
    if (c.num_classes != 0)
      return KeyError("data.num_classes",
                      fmt::format("= {} is for data.dataset = 'files' ('{}' has 10 classes)",
                                  c.num_classes, c.dataset));
    return Status::Ok();
  }
  if (c.train.empty() && c.test.empty())
    return KeyError("data.train", "and data.test are both empty: data.dataset = 'files' needs one");
  if (c.npz_features.empty()) return KeyError("data.npz.features", "must not be empty");
  if (c.npz_labels.empty()) return KeyError("data.npz.labels", "must not be empty");
  for (const bool is_train : {true, false}) {
    const std::string& path = is_train ? c.train : c.test;
    const std::string& labels = is_train ? c.train_labels : c.test_labels;
    const char* key = is_train ? "data.train" : "data.test";
    const char* labels_key = is_train ? "data.train_labels" : "data.test_labels";
    if (path.empty()) {
      if (!labels.empty()) return KeyError(labels_key, fmt::format("is set but {} is empty", key));
      continue;
    }
    Result<std::string> f = DataFileFormat(path, c.format);
    if (!f.ok()) return f.status().WithContext(fmt::format("key '{}'", key));
    if (FormatHasLabelsFile(*f) && labels.empty())
      return KeyError(labels_key,
                      fmt::format("is required: {} = '{}' is {} features, whose labels are "
                                  "in a second file",
                                  key, path, *f));
    if (!FormatHasLabelsFile(*f) && !labels.empty())
      return KeyError(labels_key, fmt::format("must be empty: {} = '{}' ({}) holds its own labels",
                                              key, path, *f));
  }
  return Status::Ok();
}

}  // namespace

Status DataConfig::Validate() const {
  if (dataset != "fashion-mnist" && dataset != "synthetic" && dataset != "files")
    return KeyError("data.dataset",
                    "= '" + dataset + "' is unknown; use 'fashion-mnist', 'synthetic' or 'files'");
  TRIB_RETURN_IF_ERROR(ValidateFiles(*this));
  if (train_examples < 0) return KeyError("data.train_examples", "must be >= 0 (0: all)");
  if (test_examples < 0) return KeyError("data.test_examples", "must be >= 0 (0: all)");
  if (synthetic_height < 1 || synthetic_width < 1 || synthetic_height * synthetic_width > 4096)
    return KeyError("data.synthetic.height",
                    "and data.synthetic.width must be >= 1 with at most 4096 pixels");
  if (!(synthetic_noise >= 0.0) || !std::isfinite(synthetic_noise))
    return KeyError("data.synthetic.noise", "must be >= 0");
  if (num_clients < 1)
    return KeyError("data.num_clients", fmt::format("= {} must be >= 1", num_clients));
  return Status::Ok();
}

namespace {

DataFiles FilesOf(const DataConfig& c, bool train) {
  DataFiles f;
  f.path = train ? c.train : c.test;
  f.labels_path = train ? c.train_labels : c.test_labels;
  f.format = c.format;
  f.npz_features = c.npz_features;
  f.npz_labels = c.npz_labels;
  f.csv_label_column = c.csv_label_column;
  f.max_examples = train ? c.train_examples : c.test_examples;
  return f;
}

const char* KeyOf(bool train) { return train ? "data.train" : "data.test"; }

// data.num_classes, or (when 0) the largest label of the splits data.train and data.test name,
// plus one. `loaded` holds the splits already loaded, by the same index as {train, test}.
Result<int> NumClasses(const DataConfig& c, const Dataset* loaded[2]) {
  if (c.num_classes > 0) return static_cast<int>(c.num_classes);
  int max_label = 0;
  for (const bool train : {true, false}) {
    const Dataset* ds = loaded[train ? 0 : 1];
    if (ds != nullptr) {
      max_label = std::max(max_label, ds->num_classes - 1);  // LoadDataFiles: max label + 1
      continue;
    }
    if ((train ? c.train : c.test).empty()) continue;
    Result<std::vector<uint8_t>> labels = LoadDataFileLabels(FilesOf(c, train));
    if (!labels.ok())
      return labels.status().WithContext(
          fmt::format("key '{}' (its labels count towards data.num_classes = 0)", KeyOf(train)));
    if (!labels->empty())
      max_label = std::max<int>(max_label, *std::max_element(labels->begin(), labels->end()));
  }
  return max_label + 1;
}

Result<DataSplits> LoadFiles(const DataConfig& c, bool want_train, bool want_test) {
  std::optional<Dataset> sets[2];  // train, test
  for (const bool train : {true, false}) {
    if (!(train ? want_train : want_test)) continue;
    const DataFiles files = FilesOf(c, train);
    if (files.path.empty()) {
      if (!train) continue;  // no test set
      return Status::InvalidArgument(
          "key 'data.train' is empty: data.dataset = 'files' needs the training data here (a "
          ".npz, .csv, .npy or IDX file)");
    }
    Result<Dataset> ds = LoadDataFiles(files);
    if (!ds.ok()) return ds.status().WithContext(fmt::format("key '{}'", KeyOf(train)));
    sets[train ? 0 : 1] = std::move(*ds);
  }
  if (sets[0] && sets[1]) {
    const Dataset &a = *sets[0], &b = *sets[1];
    if (a.height != b.height || a.width != b.width || a.channels != b.channels)
      return Status::InvalidArgument(fmt::format(
          "key 'data.test': examples of {} are {}x{}x{} but those of data.train {} are {}x{}x{} "
          "(height x width x channels)",
          c.test, b.height, b.width, b.channels, c.train, a.height, a.width, a.channels));
  }
  const Dataset* loaded[2] = {sets[0] ? &*sets[0] : nullptr, sets[1] ? &*sets[1] : nullptr};
  TRIB_ASSIGN_OR_RETURN(const int num_classes, NumClasses(c, loaded));
  DataSplits d;
  for (const bool train : {true, false}) {
    std::optional<Dataset>& ds = sets[train ? 0 : 1];
    if (!ds) continue;
    for (size_t i = 0; i < ds->labels.size(); ++i)
      if (ds->labels[i] >= num_classes)
        return Status::InvalidArgument(fmt::format(
            "key 'data.num_classes' = {}: label {} of example {} in {} '{}' is not below it",
            num_classes, ds->labels[i], i, KeyOf(train), ds->name));
    ds->num_classes = num_classes;
    (train ? d.train : d.test) = std::make_shared<const Dataset>(std::move(*ds));
  }
  return d;
}

}  // namespace

Result<DataShape> DataShapeOf(const DataConfig& c) {
  TRIB_RETURN_IF_ERROR(c.Validate());
  if (c.dataset == "fashion-mnist")
    return DataShape{kFashionMnistSide, kFashionMnistSide, 1, kFashionMnistClasses};
  if (c.dataset == "synthetic")
    return DataShape{c.synthetic_height, c.synthetic_width, 1, SyntheticSpec{}.num_classes};
  const bool train = !c.train.empty();
  Result<ExampleShape> shape = PeekDataFiles(FilesOf(c, train));
  if (!shape.ok()) return shape.status().WithContext(fmt::format("key '{}'", KeyOf(train)));
  const Dataset* none[2] = {nullptr, nullptr};
  TRIB_ASSIGN_OR_RETURN(const int num_classes, NumClasses(c, none));
  return DataShape{shape->height, shape->width, shape->channels, num_classes};
}

Result<DataSplits> LoadDataSplits(const DataConfig& c, bool want_train, bool want_test) {
  return LoadDataSplits(c, want_train, want_test, SplitChoosers{});
}

namespace {

// Synthetic: train and test share the class prototypes; the test set is the tail of one larger
// draw, so no test example repeats a training one.
Result<DataSplits> LoadSynthetic(const DataConfig& c, bool want_train, bool want_test) {
  DataSplits d;
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

// The chosen examples of a loaded split.
Result<std::shared_ptr<const Dataset>> Choose(std::shared_ptr<const Dataset> d,
                                              const ExampleChooser& choose) {
  if (!d || !choose) return d;
  TRIB_ASSIGN_OR_RETURN(std::vector<uint32_t> keep, choose(d->labels, d->num_classes));
  for (uint32_t i : keep)
    if (i >= d->labels.size())
      return Status::InvalidArgument(
          fmt::format("example {} was chosen from {}, which has {}", i, d->name, d->labels.size()));
  return std::make_shared<const Dataset>(d->Subset(keep));
}

}  // namespace

Result<DataSplits> LoadDataSplits(const DataConfig& c, bool want_train, bool want_test,
                                  const SplitChoosers& choosers) {
  TRIB_RETURN_IF_ERROR(c.Validate());
  if (c.dataset != "fashion-mnist") {
    TRIB_ASSIGN_OR_RETURN(DataSplits whole, c.dataset == "files"
                                                ? LoadFiles(c, want_train, want_test)
                                                : LoadSynthetic(c, want_train, want_test));
    TRIB_ASSIGN_OR_RETURN(whole.train, Choose(std::move(whole.train), choosers.train));
    TRIB_ASSIGN_OR_RETURN(whole.test, Choose(std::move(whole.test), choosers.test));
    return whole;
  }
  DataSplits d;
  for (const bool train : {true, false}) {
    if (train ? !want_train : !want_test) continue;
    const ExampleChooser& chooser = train ? choosers.train : choosers.test;
    // A chooser's own error (a partition that does not fit) is returned as it is; the loader's
    // errors are about the files.
    Status chooser_error;
    ExampleChooser choose;
    if (chooser)
      choose = [&](std::span<const uint8_t> labels, int classes) {
        Result<std::vector<uint32_t>> keep = chooser(labels, classes);
        if (!keep.ok()) chooser_error = keep.status();
        return keep;
      };
    Result<Dataset> ds =
        LoadFashionMnist(c.dir, train ? FashionMnistSplit::kTrain : FashionMnistSplit::kTest,
                         train ? c.train_examples : c.test_examples, choose);
    if (!chooser_error.ok()) return chooser_error;
    if (!ds.ok()) return ds.status().WithContext("data.dataset 'fashion-mnist' (key data.dir)");
    (train ? d.train : d.test) = std::make_shared<const Dataset>(std::move(*ds));
  }
  return d;
}

}  // namespace tributary
