// The data sets a simulation trains and evaluates on.
//
//   dataset = "fashion-mnist"  Debian's dataset-fashion-mnist (or data_dir): 60k train / 10k test,
//                              28x28x1, capped at train_examples / test_examples when > 0.
//   dataset = "synthetic"      MakeSyntheticDataset (train/data/synthetic.h) of the configured
//                              shape: train_examples (default 60,000) and test_examples (default
//                              10,000) drawn from the same class prototypes. For population-scale
//                              runs and tests that must not depend on installed data.
#pragma once

#include <memory>

#include "sim/sim_config.h"
#include "train/data/dataset.h"

namespace tributary {

struct SimData {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;
};

// Errors name the dataset key and, for files, the path.
Result<SimData> LoadSimData(const SimConfig& config);

}  // namespace tributary
