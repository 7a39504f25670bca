#include "train/data/npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "alloc_tracker.h"
#include "data_test_util.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_util::LargestAllocation;
using testing_util::TempDir;
using testing_util::WriteFile;

// np.save(f, (np.arange(6, dtype=np.float32).reshape(2, 3) / 4)) with NumPy 1.24.
constexpr uint8_t kNumpySavedF4[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20,
    0x33, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3e, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x40, 0x3f,
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0xa0, 0x3f,
};

// A .npy written by hand, per the format's description: magic, version, the header length
// (2 bytes little-endian in version 1, 4 in versions 2 and 3), the header text, the data.
std::vector<uint8_t> HandNpy(int major, const std::string& header,
                             const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const size_t n = header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
std::vector<uint8_t> Bytes(std::initializer_list<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

std::string Header(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }\n";
}

TEST(NpyTest, ReadsWhatNumpyWrites) {
  Result<NpyArray> a = ParseNpy(kNumpySavedF4, "saved.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDtype::kF32);
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{2, 3}));
  Result<std::vector<float>> f = NpyToFloats(*a, "saved.npy", true);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f}));
  // EncodeNpy writes the same bytes NumPy does.
  const std::vector<uint64_t> shape = {2, 3};
  const std::vector<uint8_t> data(kNumpySavedF4 + 128, std::end(kNumpySavedF4));
  EXPECT_EQ(EncodeNpy(NpyDtype::kF32, shape, data),
            std::vector<uint8_t>(std::begin(kNumpySavedF4), std::end(kNumpySavedF4)));
}

TEST(NpyTest, RoundTripsEveryDtype) {
  const NpyDtype all[] = {NpyDtype::kBool, NpyDtype::kU8,  NpyDtype::kI8,  NpyDtype::kU16,
                          NpyDtype::kI16,  NpyDtype::kU32, NpyDtype::kI32, NpyDtype::kU64,
                          NpyDtype::kI64,  NpyDtype::kF32, NpyDtype::kF64};
  for (NpyDtype t : all) {
    const std::vector<uint64_t> shape = {3, 2};
    std::vector<uint8_t> data(6 * NpyItemSize(t));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 2);
    const std::vector<uint8_t> file = EncodeNpy(t, shape, data);
    EXPECT_EQ(file.size() % 64, data.size() % 64) << NpyDescr(t);  // header padded to 64
    Result<NpyArray> a = ParseNpy(file, "f");
    ASSERT_TRUE(a.ok()) << NpyDescr(t) << ": " << a.status();
    EXPECT_EQ(a->dtype, t);
    EXPECT_EQ(a->shape, shape);
    EXPECT_EQ(a->data, data);
  }
}

TEST(NpyTest, HandWrittenHeadersOfEveryVersion) {
  const std::vector<uint8_t> data = Bytes<int32_t>({1, -2, 3});
  for (int major : {1, 2, 3}) {
    Result<NpyArray> a = ParseNpy(HandNpy(major, Header("<i4", "(3,)"), data), "v");
    ASSERT_TRUE(a.ok()) << major << ": " << a.status();
    EXPECT_EQ(a->dtype, NpyDtype::kI32);
    EXPECT_EQ(a->shape, std::vector<uint64_t>{3});
    EXPECT_EQ(a->data, data);
  }
  // The dict may come in any order, with double quotes, without the trailing comma or padding;
  // Python 2 wrote dimensions as 3L.
  const char* headers[] = {
      "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i4\"}",
      "{'descr':'<i4','fortran_order':False,'shape':(3L,)}      \n",
      "  {'descr': '<i4', 'fortran_order': False, 'shape': (3, ), }\n",
  };
  for (const char* h : headers) {
    Result<NpyArray> a = ParseNpy(HandNpy(1, h, data), "h");
    ASSERT_TRUE(a.ok()) << h << ": " << a.status();
    EXPECT_EQ(a->shape, std::vector<uint64_t>{3});
  }
  // A scalar (shape ()) holds one element; '<u1' means '|u1'.
  Result<NpyArray> s = ParseNpy(HandNpy(1, Header("<u1", "()"), {42}), "scalar");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->num_elements(), 1u);
  EXPECT_EQ(s->data, std::vector<uint8_t>{42});
  // A zero dimension makes the array empty however large the others are.
  s = ParseNpy(HandNpy(1, Header("<f8", "(0, 4611686018427387904)")), "empty");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_elements(), 0u);
}

TEST(NpyTest, WrongMagicVersionAndTruncationsAreCorruption) {
  const std::vector<uint8_t> good = HandNpy(1, Header("<f4", "(2,)"), Bytes<float>({1, 2}));
  struct Case {
    std::vector<uint8_t> bytes;
    std::string want;
  };
  std::vector<uint8_t> v4 = good;
  v4[6] = 4;
  const Case cases[] = {
      {{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}, "wrong magic 'PK\\x03\\x04"},
      {{}, "expected at least 10 bytes, got 0"},
      {std::vector<uint8_t>(good.begin(), good.begin() + 9), "expected at least 10 bytes, got 9"},
      {v4, "NPY version 4.0 is not supported"},
      {std::vector<uint8_t>(good.begin(), good.begin() + 30), "truncated NPY header"},
      {std::vector<uint8_t>(good.begin(), good.end() - 1),
       "truncated: expected 8 bytes of data after the"},
  };
  for (const Case& c : cases) {
    Result<NpyArray> a = ParseNpy(c.bytes, "bad.npy");
    ASSERT_FALSE(a.ok()) << c.want;
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption) << a.status();
    EXPECT_THAT(a.status().message(), AllOf(HasSubstr("bad.npy"), HasSubstr(c.want)));
  }
  // Bytes after the data are an error too.
  std::vector<uint8_t> more = good;
  more.push_back(0);
  Result<NpyArray> a = ParseNpy(more, "more.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr("shape mismatch"), HasSubstr("(2,), <f4"),
                    HasSubstr("accounts for 8 bytes of data, but 9 follow it")));
}

TEST(NpyTest, MalformedHeadersNameTheProblem) {
  const struct {
    const char* header;
    const char* want;
  } cases[] = {
      {"{'descr': '<f4', 'shape': (1,), }", "key 'fortran_order' is missing"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "unknown key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
       "key 'descr' appears twice"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
       "does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "text after the closing"},
      {"{'descr': '<f4\\n', 'fortran_order': False, 'shape': (1,)}", "escapes"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'"},
      {"['descr', '<f4']", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1 2)}", "expected ','"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,", "expected a non-negative"},
  };
  for (const auto& c : cases) {
    Result<NpyArray> a = ParseNpy(HandNpy(1, c.header, Bytes<float>({1})), "m.npy");
    ASSERT_FALSE(a.ok()) << c.header;
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption) << a.status();
    EXPECT_THAT(a.status().message(),
                AllOf(HasSubstr("m.npy: malformed NPY header"), HasSubstr(c.want)))
        << c.header;
  }
  // Binary junk in a header is shown escaped.
  Result<NpyArray> a = ParseNpy(HandNpy(1, std::string("{\x01\xff", 3)), "junk.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("{\\x01\\xff"));
}

TEST(NpyTest, UnsupportedDtypesAndOrderSayWhatToDo) {
  const struct {
    std::string header;
    const char* want;
  } cases[] = {
      {Header(">f4", "(1,)"), "dtype '>f4' is big-endian"},
      {Header("<c8", "(1,)"), "dtype '<c8' is not supported"},
      {Header("<U3", "(1,)"), "dtype '<U3' is not supported"},
      {Header("|f4", "(1,)"), "dtype '|f4' is not supported"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", "structured dtypes"},
      {Header("<f4", "(2, 2)", /*fortran=*/true), "fortran_order is True (shape (2, 2))"},
      {Header("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), "more than 8 dimensions"},
  };
  for (const auto& c : cases) {
    Result<NpyArray> a = ParseNpy(HandNpy(1, c.header, std::vector<uint8_t>(16)), "u.npy");
    ASSERT_FALSE(a.ok()) << c.header;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << a.status();
    EXPECT_THAT(a.status().message(), AllOf(HasSubstr("u.npy"), HasSubstr(c.want)));
  }
  // Fortran order does not matter for one dimension.
  EXPECT_TRUE(
      ParseNpy(HandNpy(1, Header("<f4", "(4,)", true), std::vector<uint8_t>(16)), "1d").ok());
}

TEST(NpyTest, HugeShapesFailBeforeAllocating) {
  TempDir dir;
  // 2^31 x 2^31 float32s, with 16 bytes of data behind the header.
  const std::vector<uint8_t> huge =
      HandNpy(1, Header("<f4", "(2147483648, 2147483648)"), std::vector<uint8_t>(16));
  WriteFile(dir.File("huge.npy"), huge);
  {
    LargestAllocation largest;
    Result<NpyArray> a = ReadNpyFile(dir.File("huge.npy"));
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
    EXPECT_THAT(a.status().message(),
                AllOf(HasSubstr(dir.File("huge.npy")), HasSubstr("(2147483648, 2147483648)"),
                      HasSubstr("cap of 100000000")));
    EXPECT_LT(largest.bytes(), 128u * 1024);
  }
  // Eight dimensions of 2^63 would overflow any fixed-width product; still a clean error.
  std::string dims;
  for (int i = 0; i < 8; ++i) dims += "9223372036854775808, ";
  Result<NpyArray> a = ParseNpy(HandNpy(3, Header("<f8", "(" + dims + ")")), "rank8");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  // Under the cap (90M float32s = 360 MB) but the file holds 10 bytes of data: compared with the
  // file's size before the buffer is allocated.
  WriteFile(dir.File("liar.npy"),
            HandNpy(1, Header("<f4", "(90, 1000, 1000)"), std::vector<uint8_t>(10)));
  LargestAllocation largest;
  a = ReadNpyFile(dir.File("liar.npy"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr("truncated: expected 360000000 bytes"), HasSubstr("got 10")));
  EXPECT_LT(largest.bytes(), 128u * 1024);
}

TEST(NpyTest, HeaderLengthIsCapped) {
  std::vector<uint8_t> big = HandNpy(2, std::string(kNpyMaxHeaderBytes + 1, ' '));
  LargestAllocation largest;
  Result<NpyArray> a = ParseNpy(big, "long.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(a.status().message(), HasSubstr("NPY header of 65537 bytes is over the cap"));
  // A version-2 length field claiming 4 GiB, with nothing behind it.
  std::vector<uint8_t> claim = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff};
  a = ParseNpy(claim, "claim.npy");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  EXPECT_LT(largest.bytes(), 1024u);
}

TEST(NpyTest, CapAndMaxItemsAreOptions) {
  const std::vector<uint64_t> shape = {4, 3};
  std::vector<uint8_t> data(12);
  for (size_t i = 0; i < 12; ++i) data[i] = static_cast<uint8_t>(i);
  const std::vector<uint8_t> file = EncodeNpy(NpyDtype::kU8, shape, data);
  EXPECT_TRUE(ParseNpy(file, "f", {.max_elements = 12}).ok());
  Result<NpyArray> a = ParseNpy(file, "f", {.max_elements = 11});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  a = ParseNpy(file, "f", {.max_items = 2});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(a->data, std::vector<uint8_t>(data.begin(), data.begin() + 6));
  // Only the items read must be present.
  a = ParseNpy(std::span(file).first(file.size() - 6), "f", {.max_items = 2});
  ASSERT_TRUE(a.ok()) << a.status();
  a = TakeNpy(file, "f", {.max_items = 3});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->data, std::vector<uint8_t>(data.begin(), data.begin() + 9));
}

TEST(NpyTest, ReadsFilesAndTheirHeaders) {
  TempDir dir;
  const std::vector<uint64_t> shape = {2, 2, 2};
  const std::vector<uint8_t> data = Bytes<double>({1, 2, 3, 4, 5, 6, 7, 8});
  WriteFile(dir.File("a.npy"), EncodeNpy(NpyDtype::kF64, shape, data));
  Result<NpyArray> a = ReadNpyFile(dir.File("a.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->shape, shape);
  EXPECT_EQ(a->data, data);
  a = ReadNpyFile(dir.File("a.npy"), {.max_items = 1});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->data.size(), 32u);
  Result<NpyHeader> h = ReadNpyFileHeader(dir.File("a.npy"));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->shape, shape);
  EXPECT_EQ(h->dtype, NpyDtype::kF64);
  EXPECT_EQ(h->data_offset, 128u);
  EXPECT_EQ(h->data_bytes(), 64u);
  // The header reader still checks that the data is all there.
  const std::vector<uint8_t> file = EncodeNpy(NpyDtype::kF64, shape, data);
  WriteFile(dir.File("short.npy"), std::span(file).first(file.size() - 8));
  h = ReadNpyFileHeader(dir.File("short.npy"));
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.status().message(), HasSubstr("truncated: expected 64 bytes"));
  a = ReadNpyFile(dir.File("missing.npy"));
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(a.status().message(), HasSubstr(dir.File("missing.npy")));
  a = ReadNpyFile(dir.path());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  // A file shorter than the preamble.
  WriteFile(dir.File("tiny.npy"), std::vector<uint8_t>{0x93, 'N'});
  a = ReadNpyFile(dir.File("tiny.npy"));
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
}

TEST(NpyTest, ConvertsToFloatsAndLabels) {
  const std::vector<uint64_t> two = {2};
  NpyArray bytes{NpyDtype::kU8, two, {0, 255}};
  EXPECT_EQ(*NpyToFloats(bytes, "b", true), (std::vector<float>{0.0f, 1.0f}));
  EXPECT_EQ(*NpyToFloats(bytes, "b", false), (std::vector<float>{0.0f, 255.0f}));
  NpyArray i16{NpyDtype::kI16, two, Bytes<int16_t>({-300, 7})};
  EXPECT_EQ(*NpyToFloats(i16, "i", true), (std::vector<float>{-300.0f, 7.0f}));
  NpyArray f8{NpyDtype::kF64, two, Bytes<double>({0.5, NAN})};
  Result<std::vector<float>> f = NpyToFloats(f8, "x.npy", true);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), AllOf(HasSubstr("x.npy: element 1 is nan")));
  f8.data = Bytes<double>({1e300, 0});
  EXPECT_FALSE(NpyToFloats(f8, "x", true).ok());

  NpyArray labels{NpyDtype::kI64, {3}, Bytes<int64_t>({0, 9, 255})};
  EXPECT_EQ(*NpyToLabels(labels, "y"), (std::vector<uint8_t>{0, 9, 255}));
  labels.data = Bytes<int64_t>({0, -1, 2});
  Result<std::vector<uint8_t>> l = NpyToLabels(labels, "y.npy");
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(),
              HasSubstr("y.npy: label -1 of example 1 is not an integer in [0, 255]"));
  labels.data = Bytes<int64_t>({0, 1, 256});
  EXPECT_FALSE(NpyToLabels(labels, "y").ok());
  NpyArray fl{NpyDtype::kF32, {3}, Bytes<float>({0.0f, 3.0f, 7.0f})};
  EXPECT_EQ(*NpyToLabels(fl, "y"), (std::vector<uint8_t>{0, 3, 7}));
  fl.data = Bytes<float>({0.0f, 2.5f, 7.0f});
  l = NpyToLabels(fl, "y");
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.status().message(), HasSubstr("label 2.5 of example 1"));
  fl.data = Bytes<float>({0.0f, NAN, 7.0f});
  EXPECT_FALSE(NpyToLabels(fl, "y").ok());
  NpyArray b{NpyDtype::kBool, {2}, {1, 0}};
  EXPECT_EQ(*NpyToLabels(b, "y"), (std::vector<uint8_t>{1, 0}));
}

}  // namespace
}  // namespace tributary
