#include "train/data/fashion_mnist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "data_test_util.h"
#include "train/data/idx.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzFile;

bool RealDataPresent() {
  struct stat st {};
  return ::stat(kDefaultFashionMnistDir, &st) == 0 && S_ISDIR(st.st_mode);
}

#define SKIP_WITHOUT_REAL_DATA()                                                  \
  if (!RealDataPresent())                                                         \
  GTEST_SKIP() << kDefaultFashionMnistDir                                         \
               << " is absent; install the Debian package dataset-fashion-mnist " \
                  "(scripts/setup-deps) to run this test"

std::vector<int64_t> Histogram(const Dataset& ds) {
  std::vector<int64_t> h(ds.num_classes, 0);
  for (uint8_t l : ds.labels) ++h[l];
  return h;
}

TEST(FashionMnistTest, LoadsRealTestSplit) {
  SKIP_WITHOUT_REAL_DATA();
  Result<Dataset> ds = LoadFashionMnist(kDefaultFashionMnistDir, FashionMnistSplit::kTest);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->name, "fashion-mnist-test");
  EXPECT_EQ(ds->size(), kFashionMnistTestSize);
  EXPECT_EQ(ds->height, 28);
  EXPECT_EQ(ds->width, 28);
  EXPECT_EQ(ds->channels, 1);
  EXPECT_EQ(ds->num_classes, 10);
  ASSERT_EQ(ds->images.size(), static_cast<size_t>(10000 * 784));
  EXPECT_EQ(Histogram(*ds), std::vector<int64_t>(10, 1000));
  const auto [lo, hi] = std::minmax_element(ds->images.begin(), ds->images.end());
  EXPECT_EQ(*lo, 0.0f);
  EXPECT_EQ(*hi, 1.0f);
  // The published mean pixel of Fashion-MNIST is about 0.286.
  const double mean = std::accumulate(ds->images.begin(), ds->images.end(), 0.0) /
                      static_cast<double>(ds->images.size());
  EXPECT_NEAR(mean, 0.286, 0.01);
}

TEST(FashionMnistTest, LoadsPrefixOfRealTrainSplit) {
  SKIP_WITHOUT_REAL_DATA();
  // Empty dir means the default one.
  Result<Dataset> ds = LoadFashionMnist("", FashionMnistSplit::kTrain, 600);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->name, "fashion-mnist-train");
  EXPECT_EQ(ds->size(), 600);
  EXPECT_EQ(ds->images.size(), static_cast<size_t>(600 * 784));
  // 600 examples of a shuffled set: every class appears.
  for (int64_t count : Histogram(*ds)) EXPECT_GT(count, 20);
}

TEST(FashionMnistTest, MissingDirectoryNamesThePackage) {
  TempDir dir;
  Result<Dataset> ds = LoadFashionMnist(dir.File("absent"), FashionMnistSplit::kTest);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(ds.status().message(),
              AllOf(HasSubstr(dir.File("absent")), HasSubstr("dataset-fashion-mnist"),
                    HasSubstr("scripts/setup-deps")));
  // A directory without the files.
  ds = LoadFashionMnist(dir.path(), FashionMnistSplit::kTrain);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(ds.status().message(),
              AllOf(HasSubstr("train-images-idx3-ubyte.gz"), HasSubstr("dataset-fashion-mnist")));
}

// A small fake split written by the test: n images of 28x28 with pixel value = label * 25.
class FakeFashionMnist : public ::testing::Test {
 protected:
  void Write(const std::string& prefix, uint32_t n_images, std::vector<uint8_t> labels, bool gzip,
             uint32_t side = 28) {
    std::vector<uint8_t> pixels(static_cast<size_t>(n_images) * side * side);
    for (size_t i = 0; i < pixels.size(); ++i)
      pixels[i] = static_cast<uint8_t>(labels[(i / (side * side)) % labels.size()] * 25 + 30);
    const auto images = EncodeIdx(std::vector<uint32_t>{n_images, side, side}, pixels);
    const auto label_file =
        EncodeIdx(std::vector<uint32_t>{static_cast<uint32_t>(labels.size())}, labels);
    if (gzip) {
      WriteGzFile(dir_.File(prefix + "-images-idx3-ubyte.gz"), images);
      WriteGzFile(dir_.File(prefix + "-labels-idx1-ubyte.gz"), label_file);
    } else {
      WriteFile(dir_.File(prefix + "-images-idx3-ubyte"), images);
      WriteFile(dir_.File(prefix + "-labels-idx1-ubyte"), label_file);
    }
  }
  TempDir dir_;
};

TEST_F(FakeFashionMnist, ReadsGzipAndPlainNames) {
  Write("t10k", 5, {3, 1, 4, 1, 5}, /*gzip=*/false);
  Write("train", 3, {9, 2, 6}, /*gzip=*/true);
  Result<Dataset> test = LoadFashionMnist(dir_.path(), FashionMnistSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->labels, (std::vector<uint8_t>{3, 1, 4, 1, 5}));
  EXPECT_FLOAT_EQ(test->image(2)[0], (4 * 25 + 30) / 255.0f);
  Result<Dataset> train = LoadFashionMnist(dir_.path(), FashionMnistSplit::kTrain);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->size(), 3);
  EXPECT_FLOAT_EQ(train->image(0)[783], (9 * 25 + 30) / 255.0f);
}

TEST_F(FakeFashionMnist, RejectsCountMismatch) {
  Write("t10k", 4, {1, 2, 3}, /*gzip=*/true);
  Result<Dataset> ds = LoadFashionMnist(dir_.path(), FashionMnistSplit::kTest);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(ds.status().message(), AllOf(HasSubstr("t10k-images-idx3-ubyte.gz holds 4 images"),
                                           HasSubstr("t10k-labels-idx1-ubyte.gz holds 3 labels")));
}

TEST_F(FakeFashionMnist, RejectsBadLabelAndSize) {
  Write("t10k", 2, {1, 12}, /*gzip=*/true);
  Result<Dataset> ds = LoadFashionMnist(dir_.path(), FashionMnistSplit::kTest);
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(),
              AllOf(HasSubstr("t10k-labels-idx1-ubyte.gz"), HasSubstr("label 12 of example 1")));

  Write("train", 2, {1, 2}, /*gzip=*/true, /*side=*/27);
  ds = LoadFashionMnist(dir_.path(), FashionMnistSplit::kTrain);
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(),
              AllOf(HasSubstr("train-images-idx3-ubyte.gz"), HasSubstr("27x27, expected 28x28")));
}

}  // namespace
}  // namespace tributary

namespace tributary {
namespace {

TEST(FashionMnistTest, AChooserKeepsOnlyItsExamplesInItsOrder) {
  SKIP_WITHOUT_REAL_DATA();
  Result<Dataset> all = LoadFashionMnist("", FashionMnistSplit::kTest);
  ASSERT_TRUE(all.ok()) << all.status();
  // Every sandal (class 5), last one first, and example 3 twice: what a partition may ask for.
  size_t seen_labels = 0;
  ExampleChooser sandals = [&](std::span<const uint8_t> labels,
                               int classes) -> Result<std::vector<uint32_t>> {
    seen_labels = labels.size();
    EXPECT_EQ(classes, 10);
    std::vector<uint32_t> keep;
    for (size_t i = labels.size(); i-- > 0;)
      if (labels[i] == 5) keep.push_back(static_cast<uint32_t>(i));
    keep.push_back(3);
    keep.push_back(3);
    return keep;
  };
  Result<Dataset> chosen = LoadFashionMnist("", FashionMnistSplit::kTest, 0, sandals);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(seen_labels, 10000u);
  ASSERT_EQ(chosen->size(), 1002);  // 1,000 sandals in the test split, plus two
  std::vector<uint32_t> keep = *sandals(all->labels, 10);
  const Dataset want = all->Subset(keep);
  EXPECT_EQ(chosen->labels, want.labels);
  EXPECT_EQ(chosen->images, want.images);  // the same floats, bit for bit
  EXPECT_EQ(chosen->name, "fashion-mnist-test");

  // An index past the split is refused, naming it; a chooser's own error comes back as it is.
  ExampleChooser past = [](std::span<const uint8_t>, int) -> Result<std::vector<uint32_t>> {
    return std::vector<uint32_t>{10000};
  };
  Result<Dataset> bad = LoadFashionMnist("", FashionMnistSplit::kTest, 0, past);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("example 10000"));
  ExampleChooser refuses = [](std::span<const uint8_t>, int) -> Result<std::vector<uint32_t>> {
    return Status::InvalidArgument("no share for you");
  };
  EXPECT_EQ(LoadFashionMnist("", FashionMnistSplit::kTest, 0, refuses).status().message(),
            "no share for you");
}

}  // namespace
}  // namespace tributary
