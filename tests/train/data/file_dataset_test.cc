// The "files" data set: LoadDataFiles over every format, and the data.* keys that name the files
// (DataConfig, LoadDataSplits, DataShapeOf), up to the simulator's partition of the training set.
#include "train/data/file_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/config_schema.h"
#include "data_test_util.h"
#include "train/data/data_config.h"
#include "train/data/idx.h"
#include "train/data/npy.h"
#include "train/data/partition.h"
#include "zip_writer.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::MakeZip;
using testing_util::TempDir;
using testing_util::WriteFile;

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<uint8_t> Npy(NpyDtype t, std::vector<uint64_t> shape, const std::vector<uint8_t>& d) {
  return EncodeNpy(t, shape, d);
}

std::vector<uint8_t> Text(const std::string& s) { return {s.begin(), s.end()}; }

// n examples of 2x2x3 bytes (pixel value = 10 * label + channel) and their labels, i % classes.
struct Images {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
};
Images MakeImages(int n, int classes) {
  Images im;
  for (int i = 0; i < n; ++i) {
    im.labels.push_back(i % classes);
    for (int p = 0; p < 4; ++p)
      for (int c = 0; c < 3; ++c) im.pixels.push_back(static_cast<uint8_t>(10 * (i % classes) + c));
  }
  return im;
}

// A .npz of n such examples under keys "x" and "y", deflated.
std::vector<uint8_t> ImagesNpz(int n, int classes) {
  const Images im = MakeImages(n, classes);
  return MakeZip({{"x.npy", Npy(NpyDtype::kU8, {static_cast<uint64_t>(n), 2, 2, 3}, im.pixels),
                   ZIP_CM_DEFLATE},
                  {"y.npy", Npy(NpyDtype::kI64, {static_cast<uint64_t>(n)}, Bytes(im.labels)),
                   ZIP_CM_DEFLATE}});
}

TEST(DataFileFormatTest, ComesFromTheNameUnlessGiven) {
  const std::pair<const char*, const char*> cases[] = {
      {"a/train.npz", "npz"},
      {"T.NPY", "npy"},
      {"x.csv", "csv"},
      {"train-images-idx3-ubyte", "idx"},
      {"train-images-idx3-ubyte.gz", "idx"},
      {"images.idx", "idx"},
  };
  for (const auto& [path, want] : cases) {
    Result<std::string> f = DataFileFormat(path, "");
    ASSERT_TRUE(f.ok()) << path << ": " << f.status();
    EXPECT_EQ(*f, want) << path;
  }
  EXPECT_EQ(*DataFileFormat("data.bin", "npy"), "npy");
  EXPECT_THAT(DataFileFormat("data.bin", "").status().message(),
              AllOf(HasSubstr("cannot tell the format of data.bin"), HasSubstr("data.format")));
  EXPECT_THAT(DataFileFormat("x.csv.gz", "").status().message(),
              HasSubstr("only IDX files are read gzip-compressed"));
  EXPECT_FALSE(DataFileFormat("x.npz", "parquet").ok());
}

TEST(FileDatasetTest, NpzImagesAreScaledAndKeepTheirShape) {
  TempDir dir;
  WriteFile(dir.File("d.npz"), ImagesNpz(5, 3));
  Result<Dataset> ds = LoadDataFiles({.path = dir.File("d.npz")});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->name, dir.File("d.npz"));
  EXPECT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->height, 2);
  EXPECT_EQ(ds->width, 2);
  EXPECT_EQ(ds->channels, 3);
  EXPECT_EQ(ds->num_classes, 3);
  // Example 2 (label 2), pixel (1, 0), channel 1: (10 * 2 + 1) / 255, in HWC order.
  EXPECT_FLOAT_EQ(ds->image(2)[(1 * 2 + 0) * 3 + 1], 21 / 255.0f);
  EXPECT_THAT(ds->labels, ElementsAre(0, 1, 2, 0, 1));
  // Other keys, and only the first examples.
  WriteFile(dir.File("k.npz"),
            MakeZip({{"feat.npy", Npy(NpyDtype::kF32, {3, 2}, Bytes<float>({1, 2, 3, 4, 5, 6}))},
                     {"cls.npy", Npy(NpyDtype::kF64, {3, 1}, Bytes<double>({1, 0, 4}))}}));
  ds = LoadDataFiles(
      {.path = dir.File("k.npz"), .npz_features = "feat", .npz_labels = "cls", .max_examples = 2});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->height, 1);
  EXPECT_EQ(ds->width, 2);
  EXPECT_THAT(ds->images, ElementsAre(1, 2, 3, 4));  // float32 as they are
  EXPECT_THAT(ds->labels, ElementsAre(1, 0));
  Result<ExampleShape> shape = PeekDataFiles({.path = dir.File("d.npz")});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->channels, 3);
  Result<std::vector<uint8_t>> labels = LoadDataFileLabels({.path = dir.File("d.npz")});
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_THAT(*labels, ElementsAre(0, 1, 2, 0, 1));
}

TEST(FileDatasetTest, NpyPairsCsvAndIdx) {
  TempDir dir;
  // .npy features (n, h, w) of int16, labels in a second .npy.
  WriteFile(dir.File("x.npy"), Npy(NpyDtype::kI16, {2, 1, 3}, Bytes<int16_t>({1, 2, 3, 4, 5, 6})));
  WriteFile(dir.File("y.npy"), Npy(NpyDtype::kU8, {2}, {7, 1}));
  Result<Dataset> ds = LoadDataFiles({.path = dir.File("x.npy"), .labels_path = dir.File("y.npy")});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->height, 1);
  EXPECT_EQ(ds->width, 3);
  EXPECT_THAT(ds->images, ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(ds->num_classes, 8);
  // CSV: (n, d).
  WriteFile(dir.File("t.csv"), Text("a,b,label\n0.5,1,2\n1.5,2,0\n"));
  ds = LoadDataFiles({.path = dir.File("t.csv")});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->width, 2);
  EXPECT_THAT(ds->images, ElementsAre(0.5f, 1, 1.5f, 2));
  EXPECT_THAT(ds->labels, ElementsAre(2, 0));
  Result<ExampleShape> shape = PeekDataFiles({.path = dir.File("t.csv")});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->width, 2);
  // IDX images and labels, any name with a format given.
  WriteFile(dir.File("img.bin"), EncodeIdx(std::vector<uint32_t>{2, 2, 2},
                                           std::vector<uint8_t>{0, 51, 102, 255, 0, 0, 0, 0}));
  WriteFile(dir.File("lbl.bin"), EncodeIdx(std::vector<uint32_t>{2}, std::vector<uint8_t>{3, 9}));
  ds = LoadDataFiles(
      {.path = dir.File("img.bin"), .labels_path = dir.File("lbl.bin"), .format = "idx"});
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds->height, 2);
  EXPECT_FLOAT_EQ(ds->images[3], 1.0f);
  EXPECT_FLOAT_EQ(ds->images[1], 0.2f);
  EXPECT_EQ(ds->num_classes, 10);
}

TEST(FileDatasetTest, MismatchesAndShapesAreNamed) {
  TempDir dir;
  WriteFile(dir.File("x.npy"), Npy(NpyDtype::kF32, {3, 2}, Bytes<float>({1, 2, 3, 4, 5, 6})));
  WriteFile(dir.File("y2.npy"), Npy(NpyDtype::kI32, {2}, Bytes<int32_t>({0, 1})));
  Result<Dataset> ds =
      LoadDataFiles({.path = dir.File("x.npy"), .labels_path = dir.File("y2.npy")});
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), AllOf(HasSubstr(dir.File("x.npy") + " holds 3 examples but " +
                                                     dir.File("y2.npy") + " holds 2 labels")));
  WriteFile(dir.File("y22.npy"), Npy(NpyDtype::kI32, {3, 2}, Bytes<int32_t>({0, 1, 0, 1, 0, 1})));
  ds = LoadDataFiles({.path = dir.File("x.npy"), .labels_path = dir.File("y22.npy")});
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), HasSubstr("the labels have shape (3, 2); expected (n,)"));
  WriteFile(dir.File("flat.npy"), Npy(NpyDtype::kF32, {2}, Bytes<float>({1, 2})));
  ds = LoadDataFiles({.path = dir.File("flat.npy"), .labels_path = dir.File("y2.npy")});
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(),
              HasSubstr("the features have shape (2); expected (n, d), (n, h, w) or (n, h, w, c)"));
  WriteFile(dir.File("none.npy"), Npy(NpyDtype::kF32, {0, 4}, {}));
  WriteFile(dir.File("y0.npy"), Npy(NpyDtype::kI32, {0}, {}));
  ds = LoadDataFiles({.path = dir.File("none.npy"), .labels_path = dir.File("y0.npy")});
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), HasSubstr("holds no examples"));
  // No examples but a huge example size: refused, not multiplied.
  WriteFile(dir.File("wide.npy"), Npy(NpyDtype::kF32, {0, 1u << 31, 1u << 31}, {}));
  ds = LoadDataFiles({.path = dir.File("wide.npy"), .labels_path = dir.File("y0.npy")});
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kOutOfRange);
  WriteFile(dir.File("nan.npy"), Npy(NpyDtype::kF32, {1, 1}, Bytes<float>({NAN})));
  WriteFile(dir.File("y1.npy"), Npy(NpyDtype::kI32, {1}, Bytes<int32_t>({0})));
  ds = LoadDataFiles({.path = dir.File("nan.npy"), .labels_path = dir.File("y1.npy")});
  ASSERT_FALSE(ds.ok());
  EXPECT_THAT(ds.status().message(), HasSubstr("element 0 is nan"));
}

// The data.* keys of a "files" data set in `dir`: d.npz (train) and t.npz (test).
DataConfig FilesConfig(const TempDir& dir) {
  DataConfig c;
  c.dataset = "files";
  c.train = dir.File("d.npz");
  c.test = dir.File("t.npz");
  return c;
}

TEST(FilesDataConfigTest, KeysAreBoundAndOldOnesRenamed) {
  DataConfig d;
  ConfigSchema s("test");
  BindDataConfig(s, &d, /*partitioned=*/true);
  for (const char* key :
       {"data.train", "data.train_labels", "data.test", "data.test_labels", "data.format",
        "data.npz.features", "data.npz.labels", "data.csv.label_column", "data.num_classes"})
    EXPECT_NE(s.Find(key), nullptr) << key;
  ASSERT_TRUE(s.Assign("data.train=a.npz").ok());
  EXPECT_EQ(d.train, "a.npz");
  const Status old = s.Assign("data.train_images=a.idx");
  EXPECT_THAT(old.message(), HasSubstr("key 'data.train_images' was renamed 'data.train'"));
}

TEST(FilesDataConfigTest, ValidateChecksTheKeysFitTogether) {
  const struct {
    DataConfig config;
    const char* want;
  } cases[] = {
      {{.train = "a.npz"}, "key 'data.train' = 'a.npz' is for data.dataset = 'files', not"},
      {{.num_classes = 5}, "key 'data.num_classes' = 5 is for data.dataset = 'files'"},
      {{.dataset = "files"}, "key 'data.train' and data.test are both empty"},
      {{.dataset = "files", .train = "x.npy"},
       "key 'data.train_labels' is required: data.train = 'x.npy' is npy features"},
      {{.dataset = "files", .train = "a.npz", .train_labels = "b.npy"},
       "key 'data.train_labels' must be empty: data.train = 'a.npz' (npz) holds its own labels"},
      {{.dataset = "files", .train = "a.npz", .test_labels = "b.npy"},
       "key 'data.test_labels' is set but data.test is empty"},
      {{.dataset = "files", .train = "a.dat"}, "key 'data.train': cannot tell the format"},
      {{.dataset = "files", .train = "a.npz", .format = "hdf5"}, "key 'data.format' = 'hdf5'"},
      {{.dataset = "files", .train = "a.npz", .num_classes = 257}, "key 'data.num_classes' = 257"},
      {{.dataset = "mnist"}, "use 'fashion-mnist', 'synthetic' or 'files'"},
  };
  for (const auto& c : cases) {
    const Status s = c.config.Validate();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.want;
    EXPECT_THAT(s.message(), HasSubstr(c.want));
  }
  EXPECT_TRUE((DataConfig{.dataset = "files", .train = "a.csv"}).Validate().ok());
  EXPECT_TRUE(
      (DataConfig{.dataset = "files", .train = "a.dat", .train_labels = "b.dat", .format = "npy"})
          .Validate()
          .ok());
}

TEST(FilesDataConfigTest, SplitsShareTheirClassCountAndShape) {
  TempDir dir;
  WriteFile(dir.File("d.npz"), ImagesNpz(30, 3));  // labels 0..2
  WriteFile(dir.File("t.npz"), ImagesNpz(8, 5));   // labels 0..4
  DataConfig c = FilesConfig(dir);
  Result<DataSplits> d = LoadDataSplits(c, true, true);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->train->size(), 30);
  EXPECT_EQ(d->test->size(), 8);
  // 0 means the largest label of both splits, plus one, even when only one is loaded.
  EXPECT_EQ(d->train->num_classes, 5);
  EXPECT_EQ(d->test->num_classes, 5);
  d = LoadDataSplits(c, true, false);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->train->num_classes, 5);
  EXPECT_FALSE(d->test);
  Result<DataShape> shape = DataShapeOf(c);
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(shape->height, 2);
  EXPECT_EQ(shape->width, 2);
  EXPECT_EQ(shape->channels, 3);
  EXPECT_EQ(shape->num_classes, 5);

  // An explicit class count must cover the labels.
  c.num_classes = 12;
  EXPECT_EQ(DataShapeOf(c)->num_classes, 12);
  d = LoadDataSplits(c, false, true);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->test->num_classes, 12);
  c.num_classes = 4;
  d = LoadDataSplits(c, false, true);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              HasSubstr("key 'data.num_classes' = 4: label 4 of example 4 in data.test"));

  // Without data.test there is no test split; without data.train, no training split.
  c = FilesConfig(dir);
  c.test.clear();
  d = LoadDataSplits(c, true, true);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->test);
  EXPECT_EQ(d->train->num_classes, 3);
  c = FilesConfig(dir);
  c.train.clear();
  d = LoadDataSplits(c, true, true);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("key 'data.train' is empty"));
  EXPECT_EQ(DataShapeOf(c)->num_classes, 5);  // from the test split alone

  // Splits of different shapes.
  WriteFile(dir.File("other.csv"), Text("a,label\n1,0\n"));
  c = FilesConfig(dir);
  c.test = dir.File("other.csv");
  d = LoadDataSplits(c, true, true);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(),
              AllOf(HasSubstr("key 'data.test': examples of " + dir.File("other.csv") +
                              " are 1x1x1 but those of data.train"),
                    HasSubstr("are 2x2x3")));
  // File errors name the key and the file.
  c = FilesConfig(dir);
  c.train = dir.File("missing.npz");
  d = LoadDataSplits(c, true, true);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(),
              AllOf(HasSubstr("key 'data.train'"), HasSubstr(dir.File("missing.npz"))));
  EXPECT_THAT(DataShapeOf(c).status().message(), HasSubstr("key 'data.train'"));
}

TEST(FilesDataConfigTest, TheBuiltInSetsHaveKnownShapes) {
  Result<DataShape> s = DataShapeOf(DataConfig{});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->height, 28);
  EXPECT_EQ(s->num_classes, 10);
  s = DataShapeOf(DataConfig{.dataset = "synthetic", .synthetic_height = 5, .synthetic_width = 7});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->height, 5);
  EXPECT_EQ(s->width, 7);
  EXPECT_EQ(s->channels, 1);
  EXPECT_EQ(s->num_classes, 10);
}

// The simulator's path: the data keys load the files, and the training set is partitioned among
// data.num_clients virtual clients (sim/population.cc calls MakePartition the same way).
TEST(FilesDataConfigTest, TheSimulatorPartitionsAFilesDataSet) {
  TempDir dir;
  WriteFile(dir.File("d.npz"), ImagesNpz(200, 4));
  WriteFile(dir.File("t.csv"), Text("a,b,c,d,e,f,g,h,i,j,k,l,label\n" +
                                    std::string("1,2,3,4,5,6,7,8,9,10,11,12,3\n")));
  DataConfig c = FilesConfig(dir);
  c.test.clear();
  c.partition = "dirichlet:0.5";
  c.num_clients = 10;
  Result<DataSplits> d = LoadDataSplits(c, true, true);
  ASSERT_TRUE(d.ok()) << d.status();
  Result<Partition> parts = MakePartition(c.partition, d->train->labels, d->train->num_classes,
                                          static_cast<int>(c.num_clients), c.seed);
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->size(), 10u);
  std::vector<int> seen(200, 0);
  for (const auto& share : *parts)
    for (uint32_t i : share) ++seen[i];
  for (int s : seen) EXPECT_EQ(s, 1);
  const Dataset share = d->train->Subset((*parts)[0]);
  EXPECT_EQ(share.channels, 3);
  EXPECT_EQ(share.num_classes, 4);
  parts = MakePartition("shards:2", d->train->labels, d->train->num_classes, 10, c.seed);
  ASSERT_TRUE(parts.ok()) << parts.status();
}

}  // namespace
}  // namespace tributary
