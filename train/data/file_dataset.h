// Labeled examples from a user's own files, the data.dataset = "files" data set: NumPy .npz or
// .npy (train/data/npz.h, npy.h), CSV (csv.h) or IDX (idx.h).
//
//   .npz   features and labels are two arrays of one archive (DataFiles::npz_features and
//          npz_labels, "x" and "y" by default: np.savez(f, x=features, y=labels))
//   .npy   the features; the labels are a second .npy (DataFiles::labels_path)
//   .csv   one row per example, one label column (DataFiles::csv_label_column; csv.h)
//   IDX    unsigned-byte images (.idx, *-ubyte, or gzip-compressed .gz); the labels are a second
//          IDX file (DataFiles::labels_path), as in (Fashion-)MNIST
// The format comes from the file name (DataFileFormat) unless DataFiles::format names it.
//
// Features become float32: unsigned-byte arrays (npy/npz dtype uint8, and IDX) are pixels and are
// scaled by 1/255 to [0, 1] like Fashion-MNIST; every other type keeps its values (bool: 0 or 1).
// A feature array of shape (n, d) gives examples of height 1, width d, 1 channel; (n, h, w) gives
// h x w x 1; (n, h, w, c) gives h x w x c (channels last, as the Dataset stores them). A CSV table
// is (n, d). Labels are integers in [0, 256) of shape (n,) or (n, 1): integer or bool arrays, or
// floating-point ones holding exact integers. The Dataset's num_classes is the largest label + 1
// (LoadDataSplits sets the data set's own; data_config.h).
//
// Every read is bounded (see the readers). Errors name the file and what was wrong; a file that
// holds no examples, features and labels of different lengths, and unsupported shapes are
// InvalidArgument. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/data/dataset.h"
#include "tributary/result.h"

namespace tributary {

// Cap on the feature values of one split (4 GiB of float32).
inline constexpr uint64_t kMaxDataFileElements = uint64_t{1} << 30;

struct DataFiles {
  std::string path{};         // the features (.npz and .csv: the labels too)
  std::string labels_path{};  // .npy and IDX: the labels; empty for .npz and .csv
  std::string format{};       // "npz", "npy", "csv", "idx", or "" to go by the file name
  std::string npz_features = "x";
  std::string npz_labels = "y";
  std::string csv_label_column{};  // csv.h's CsvReadOptions::label_column
  int64_t max_examples = 0;        // read only the first N examples (0: all)
};

// The reader for `path`: `format` when it is not empty (it must be one of the four names), else
// by the name's ending: .npz, .npy, .csv, or IDX for .idx, ...ubyte and .gz (case-insensitive).
// InvalidArgument naming the path when neither tells.
Result<std::string> DataFileFormat(const std::string& path, const std::string& format);

// True for the formats whose labels are in a second file (npy, idx).
bool FormatHasLabelsFile(const std::string& format);

// One split, named after files.path.
Result<Dataset> LoadDataFiles(const DataFiles& files);

// The shape of one example (height, width, channels, as above), reading as little as the format
// allows: .npy and IDX only their headers, .npz the feature array's header, CSV its first lines.
struct ExampleShape {
  int64_t height = 0, width = 0, channels = 1;
};
Result<ExampleShape> PeekDataFiles(const DataFiles& files);

// Only the labels (of the first max_examples examples), checked as LoadDataFiles checks them.
Result<std::vector<uint8_t>> LoadDataFileLabels(const DataFiles& files);

}  // namespace tributary
