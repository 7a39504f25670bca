// Fashion-MNIST: 70,000 28x28 grayscale images of clothing in 10 classes (60,000 train, 10,000
// test), as shipped by Debian's dataset-fashion-mnist package under
// TRIBUTARY_DEFAULT_FASHION_MNIST_DIR (/usr/share/datasets/fashion-mnist).
//
// The loader reads <prefix>-images-idx3-ubyte and <prefix>-labels-idx1-ubyte, where prefix is
// "train" or "t10k", preferring the .gz files the package installs and falling back to
// un-gzipped copies. It checks that both files agree on the number of examples, that images are
// 28x28 and labels < 10, and scales pixels to float in [0, 1] (byte / 255).
//
// Errors: NotFound when the directory or a file is missing (the message says to install
// dataset-fashion-mnist with scripts/setup-deps); Corruption/OutOfRange from the IDX reader or
// when the files disagree, each naming the file. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "train/data/dataset.h"
#include "tributary/config.h"
#include "tributary/result.h"

namespace tributary {

inline constexpr const char* kDefaultFashionMnistDir = TRIBUTARY_DEFAULT_FASHION_MNIST_DIR;
inline constexpr int kFashionMnistClasses = 10;
inline constexpr int kFashionMnistSide = 28;
inline constexpr int64_t kFashionMnistTrainSize = 60000;
inline constexpr int64_t kFashionMnistTestSize = 10000;

enum class FashionMnistSplit { kTrain, kTest };

// "train" or "test".
std::string_view FashionMnistSplitName(FashionMnistSplit split);

// Loads one split from `dir` (empty means kDefaultFashionMnistDir). When max_examples > 0 only
// the first max_examples examples are read (and decompressed). The Dataset is named
// "fashion-mnist-train" or "fashion-mnist-test", 28x28x1, 10 classes.
//
// With `choose`, only the examples it picks from the labels are kept, in its order: the file's
// bytes are read once and only the chosen images are scaled to floats, so the peak is the raw split
// (47 MB for train) plus the chosen floats, not the whole split as floats (188 MB). An index out of
// range is InvalidArgument.
Result<Dataset> LoadFashionMnist(const std::string& dir, FashionMnistSplit split,
                                 int64_t max_examples = 0, const ExampleChooser& choose = nullptr);

}  // namespace tributary
