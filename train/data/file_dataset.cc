#include "train/data/file_dataset.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "train/data/csv.h"
#include "train/data/idx.h"
#include "train/data/npy.h"
#include "train/data/npz.h"

namespace tributary {
namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string ShapeText(const std::vector<uint64_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

// The example shape a feature array of `shape` (examples first) gives.
Result<ExampleShape> ShapeOfFeatures(const std::vector<uint64_t>& shape, const std::string& name) {
  ExampleShape s;
  if (shape.size() == 2) {
    s.height = 1;
    s.width = static_cast<int64_t>(shape[1]);
  } else if (shape.size() == 3 || shape.size() == 4) {
    s.height = static_cast<int64_t>(shape[1]);
    s.width = static_cast<int64_t>(shape[2]);
    if (shape.size() == 4) s.channels = static_cast<int64_t>(shape[3]);
  } else {
    return Status::InvalidArgument(
        fmt::format("{}: the features have shape {}; expected (n, d), (n, h, w) or (n, h, w, c)",
                    name, ShapeText(shape)));
  }
  if (s.height == 0 || s.width == 0 || s.channels == 0)
    return Status::InvalidArgument(fmt::format(
        "{}: the features have shape {}: examples of no values", name, ShapeText(shape)));
  // The array's cap bounds the whole, but an array of no examples may claim any example size.
  unsigned __int128 per_example = 1;
  for (size_t d = 1; d < shape.size(); ++d) {
    per_example *= shape[d];
    if (per_example > kMaxDataFileElements)
      return Status::OutOfRange(fmt::format("{}: the features have shape {}: over {} values each",
                                            name, ShapeText(shape), kMaxDataFileElements));
  }
  return s;
}

Status CheckLabelShape(const std::vector<uint64_t>& shape, const std::string& name) {
  if (shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("{}: the labels have shape {}; expected (n,) or (n, 1)", name, ShapeText(shape)));
}

// Features and labels read from the files, before they become a Dataset.
struct Loaded {
  ExampleShape shape;
  std::vector<float> features;
  std::vector<uint8_t> labels;
  std::string features_name, labels_name;  // for messages
};

NpyReadOptions NpyOptions(const DataFiles& f) {
  return {.max_elements = kMaxDataFileElements,
          .max_items = static_cast<uint64_t>(std::max<int64_t>(0, f.max_examples))};
}

// A .npy or .npz features array and its labels array.
Result<Loaded> FromArrays(const NpyArray& x, const std::string& x_name, const NpyArray& y,
                          const std::string& y_name) {
  Loaded l;
  TRIB_ASSIGN_OR_RETURN(l.shape, ShapeOfFeatures(x.shape, x_name));
  TRIB_RETURN_IF_ERROR(CheckLabelShape(y.shape, y_name));
  TRIB_ASSIGN_OR_RETURN(l.features, NpyToFloats(x, x_name, /*scale_bytes=*/true));
  TRIB_ASSIGN_OR_RETURN(l.labels, NpyToLabels(y, y_name));
  l.features_name = x_name;
  l.labels_name = y_name;
  return l;
}

Result<Loaded> LoadNpz(const DataFiles& f) {
  const NpyReadOptions opt = NpyOptions(f);
  TRIB_ASSIGN_OR_RETURN(NpyArray x, ReadNpzArray(f.path, f.npz_features, opt));
  TRIB_ASSIGN_OR_RETURN(NpyArray y, ReadNpzArray(f.path, f.npz_labels, opt));
  return FromArrays(x, fmt::format("{} array '{}'", f.path, f.npz_features), y,
                    fmt::format("{} array '{}'", f.path, f.npz_labels));
}

Result<Loaded> LoadNpy(const DataFiles& f) {
  const NpyReadOptions opt = NpyOptions(f);
  TRIB_ASSIGN_OR_RETURN(NpyArray x, ReadNpyFile(f.path, opt));
  TRIB_ASSIGN_OR_RETURN(NpyArray y, ReadNpyFile(f.labels_path, opt));
  return FromArrays(x, f.path, y, f.labels_path);
}

IdxReadOptions IdxOptions(const DataFiles& f, int rank) {
  IdxReadOptions opt;
  opt.max_elements = kMaxDataFileElements;
  opt.max_items = static_cast<uint64_t>(std::max<int64_t>(0, f.max_examples));
  opt.expected_rank = rank;
  return opt;
}

Result<ExampleShape> IdxShape(const IdxArray& a, const std::string& name) {
  if (a.dims.size() < 2 || a.dims.size() > 4)
    return Status::InvalidArgument(fmt::format(
        "{}: the images have {} dimensions; expected 2 to 4 (n x d, n x h x w, n x h x w x c)",
        name, a.dims.size()));
  return ShapeOfFeatures(std::vector<uint64_t>(a.dims.begin(), a.dims.end()), name);
}

Result<Loaded> LoadIdx(const DataFiles& f) {
  TRIB_ASSIGN_OR_RETURN(IdxArray x, ReadIdxFile(f.path, IdxOptions(f, 0)));
  TRIB_ASSIGN_OR_RETURN(IdxArray y, ReadIdxFile(f.labels_path, IdxOptions(f, 1)));
  Loaded l;
  TRIB_ASSIGN_OR_RETURN(l.shape, IdxShape(x, f.path));
  // Unsigned bytes, scaled to [0, 1] as Fashion-MNIST's are.
  float scale[256];
  for (int b = 0; b < 256; ++b) scale[b] = static_cast<float>(b) / 255.0f;
  l.features.resize(x.data.size());
  std::transform(x.data.begin(), x.data.end(), l.features.begin(),
                 [&](uint8_t b) { return scale[b]; });
  l.labels = std::move(y.data);
  l.features_name = f.path;
  l.labels_name = f.labels_path;
  return l;
}

CsvReadOptions CsvOptions(const DataFiles& f) {
  CsvReadOptions opt;
  opt.label_column = f.csv_label_column;
  opt.max_elements = kMaxDataFileElements;
  opt.max_items = static_cast<uint64_t>(std::max<int64_t>(0, f.max_examples));
  return opt;
}

Result<Loaded> LoadCsv(const DataFiles& f) {
  TRIB_ASSIGN_OR_RETURN(CsvTable t, ReadCsvFile(f.path, CsvOptions(f)));
  Loaded l;
  l.shape = {1, t.features, 1};
  l.features = std::move(t.values);
  l.labels = std::move(t.labels);
  l.features_name = l.labels_name = f.path;
  return l;
}

Result<Loaded> Load(const DataFiles& f) {
  TRIB_ASSIGN_OR_RETURN(const std::string format, DataFileFormat(f.path, f.format));
  Result<Loaded> l = format == "npz"   ? LoadNpz(f)
                     : format == "npy" ? LoadNpy(f)
                     : format == "csv" ? LoadCsv(f)
                                       : LoadIdx(f);
  if (!l.ok()) return l;
  const uint64_t per_example =
      static_cast<uint64_t>(l->shape.height * l->shape.width * l->shape.channels);
  const uint64_t n = l->features.size() / per_example;
  if (n != l->labels.size())
    return Status::InvalidArgument(fmt::format("{} holds {} examples but {} holds {} labels",
                                               l->features_name, n, l->labels_name,
                                               l->labels.size()));
  if (n == 0) return Status::InvalidArgument(f.path + ": holds no examples");
  return l;
}

}  // namespace

Result<std::string> DataFileFormat(const std::string& path, const std::string& format) {
  if (!format.empty()) {
    if (format == "npz" || format == "npy" || format == "csv" || format == "idx") return format;
    return Status::InvalidArgument(
        fmt::format("format '{}' is unknown; use npz, npy, csv or idx", format));
  }
  const std::string p = Lower(path);
  if (EndsWith(p, ".npz")) return std::string("npz");
  if (EndsWith(p, ".npy")) return std::string("npy");
  if (EndsWith(p, ".csv")) return std::string("csv");
  if (EndsWith(p, ".csv.gz") || EndsWith(p, ".npy.gz") || EndsWith(p, ".npz.gz"))
    return Status::InvalidArgument(
        fmt::format("{}: only IDX files are read gzip-compressed; decompress it (gunzip)", path));
  if (EndsWith(p, ".idx") || EndsWith(p, "ubyte") || EndsWith(p, ".gz")) return std::string("idx");
  return Status::InvalidArgument(fmt::format(
      "cannot tell the format of {} from its name (.npz, .npy, .csv, or IDX: .idx, ...ubyte, .gz); "
      "set data.format",
      path));
}

bool FormatHasLabelsFile(const std::string& format) { return format == "npy" || format == "idx"; }

Result<Dataset> LoadDataFiles(const DataFiles& files) {
  TRIB_ASSIGN_OR_RETURN(Loaded l, Load(files));
  Dataset ds;
  ds.name = files.path;
  ds.height = l.shape.height;
  ds.width = l.shape.width;
  ds.channels = l.shape.channels;
  ds.num_classes = *std::max_element(l.labels.begin(), l.labels.end()) + 1;
  ds.images = std::move(l.features);
  ds.labels = std::move(l.labels);
  return ds;
}

Result<ExampleShape> PeekDataFiles(const DataFiles& f) {
  TRIB_ASSIGN_OR_RETURN(const std::string format, DataFileFormat(f.path, f.format));
  const NpyReadOptions npy = NpyOptions(f);
  if (format == "npz") {
    TRIB_ASSIGN_OR_RETURN(NpyHeader h, ReadNpzArrayHeader(f.path, f.npz_features, npy));
    return ShapeOfFeatures(h.shape, fmt::format("{} array '{}'", f.path, f.npz_features));
  }
  if (format == "npy") {
    TRIB_ASSIGN_OR_RETURN(NpyHeader h, ReadNpyFileHeader(f.path, npy));
    return ShapeOfFeatures(h.shape, f.path);
  }
  if (format == "csv") {
    CsvReadOptions opt = CsvOptions(f);
    opt.max_items = 1;
    TRIB_ASSIGN_OR_RETURN(CsvTable t, ReadCsvFile(f.path, opt));
    if (t.rows == 0) return Status::InvalidArgument(f.path + ": holds no examples");
    return ExampleShape{1, t.features, 1};
  }
  IdxReadOptions opt = IdxOptions(f, 0);
  opt.max_items = 1;
  TRIB_ASSIGN_OR_RETURN(IdxArray x, ReadIdxFile(f.path, opt));
  return IdxShape(x, f.path);
}

Result<std::vector<uint8_t>> LoadDataFileLabels(const DataFiles& f) {
  TRIB_ASSIGN_OR_RETURN(const std::string format, DataFileFormat(f.path, f.format));
  const NpyReadOptions npy = NpyOptions(f);
  if (format == "npz" || format == "npy") {
    const std::string name =
        format == "npz" ? fmt::format("{} array '{}'", f.path, f.npz_labels) : f.labels_path;
    TRIB_ASSIGN_OR_RETURN(NpyArray y, format == "npz" ? ReadNpzArray(f.path, f.npz_labels, npy)
                                                      : ReadNpyFile(f.labels_path, npy));
    TRIB_RETURN_IF_ERROR(CheckLabelShape(y.shape, name));
    return NpyToLabels(y, name);
  }
  if (format == "idx") {
    TRIB_ASSIGN_OR_RETURN(IdxArray y, ReadIdxFile(f.labels_path, IdxOptions(f, 1)));
    return std::move(y.data);
  }
  TRIB_ASSIGN_OR_RETURN(CsvTable t, ReadCsvFile(f.path, CsvOptions(f)));
  return std::move(t.labels);
}

}  // namespace tributary
