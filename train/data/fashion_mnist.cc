#include "train/data/fashion_mnist.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "train/data/idx.h"

namespace tributary {
namespace {

constexpr const char* kInstallHint =
    "install the Debian package dataset-fashion-mnist (scripts/setup-deps does)";

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The .gz the package ships, else an un-gzipped copy.
Result<std::string> FindFile(const std::string& dir, const std::string& base) {
  const std::string gz = dir + "/" + base + ".gz";
  if (IsRegularFile(gz)) return gz;
  const std::string plain = dir + "/" + base;
  if (IsRegularFile(plain)) return plain;
  return Status::NotFound(
      fmt::format("Fashion-MNIST file {} (or {}) is missing; {}", gz, plain, kInstallHint));
}

}  // namespace

std::string_view FashionMnistSplitName(FashionMnistSplit split) {
  return split == FashionMnistSplit::kTrain ? "train" : "test";
}

Result<Dataset> LoadFashionMnist(const std::string& dir_in, FashionMnistSplit split,
                                 int64_t max_examples, const ExampleChooser& choose) {
  const std::string dir = dir_in.empty() ? std::string(kDefaultFashionMnistDir) : dir_in;
  if (max_examples < 0)
    return Status::InvalidArgument(
        fmt::format("max_examples must be >= 0 (0 means all), got {}", max_examples));
  if (!IsDirectory(dir))
    return Status::NotFound(
        fmt::format("Fashion-MNIST directory {} does not exist; {}", dir, kInstallHint));
  const std::string prefix = split == FashionMnistSplit::kTrain ? "train" : "t10k";
  TRIB_ASSIGN_OR_RETURN(std::string images_path, FindFile(dir, prefix + "-images-idx3-ubyte"));
  TRIB_ASSIGN_OR_RETURN(std::string labels_path, FindFile(dir, prefix + "-labels-idx1-ubyte"));

  IdxReadOptions opt;
  opt.max_items = static_cast<uint64_t>(max_examples);
  opt.expected_rank = 3;
  TRIB_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path, opt));
  opt.expected_rank = 1;
  TRIB_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path, opt));

  if (images.dims[1] != kFashionMnistSide || images.dims[2] != kFashionMnistSide)
    return Status::Corruption(fmt::format("{}: images are {}x{}, expected {}x{}", images_path,
                                          images.dims[1], images.dims[2], kFashionMnistSide,
                                          kFashionMnistSide));
  if (images.dims[0] != labels.dims[0])
    return Status::Corruption(fmt::format("{} holds {} images but {} holds {} labels", images_path,
                                          images.dims[0], labels_path, labels.dims[0]));
  if (images.dims[0] == 0) return Status::Corruption(images_path + ": holds no examples");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= kFashionMnistClasses)
      return Status::Corruption(fmt::format("{}: label {} of example {} is not < {}", labels_path,
                                            labels.data[i], i, kFashionMnistClasses));

  Dataset ds;
  ds.name = fmt::format("fashion-mnist-{}", FashionMnistSplitName(split));
  ds.height = kFashionMnistSide;
  ds.width = kFashionMnistSide;
  ds.channels = 1;
  ds.num_classes = kFashionMnistClasses;
  // A table of byte / 255 (exact division, so 255 maps to exactly 1.0f).
  std::array<float, 256> scale;
  for (int b = 0; b < 256; ++b) scale[b] = static_cast<float>(b) / 255.0f;
  if (!choose) {
    ds.images.resize(images.data.size());
    std::transform(images.data.begin(), images.data.end(), ds.images.begin(),
                   [&](uint8_t b) { return scale[b]; });
    ds.labels = std::move(labels.data);
    return ds;
  }
  TRIB_ASSIGN_OR_RETURN(std::vector<uint32_t> keep, choose(labels.data, kFashionMnistClasses));
  const size_t pixels = static_cast<size_t>(kFashionMnistSide) * kFashionMnistSide;
  ds.images.resize(keep.size() * pixels);
  ds.labels.resize(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] >= labels.data.size())
      return Status::InvalidArgument(fmt::format("{}: example {} was chosen but the split has {}",
                                                 images_path, keep[i], labels.data.size()));
    const uint8_t* src = images.data.data() + keep[i] * pixels;
    std::transform(src, src + pixels, ds.images.begin() + static_cast<ptrdiff_t>(i * pixels),
                   [&](uint8_t b) { return scale[b]; });
    ds.labels[i] = labels.data[keep[i]];
  }
  return ds;
}

}  // namespace tributary
