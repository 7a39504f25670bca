#include "train/data/idx.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "alloc_tracker.h"
#include "data_test_util.h"
#include "tests/core/log_capture.h"
#include "tests/core/progress_lines.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_util::LargestAllocation;
using testing_util::ReadAll;
using testing_util::TempDir;
using testing_util::WriteFile;
using testing_util::WriteGzFile;

// n bytes of a repeating, non-constant pattern.
std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 3);
  return v;
}

// Just the header: magic then big-endian dims.
std::vector<uint8_t> Header(uint32_t magic, const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> out;
  const auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  return out;
}

TEST(IdxTest, ReadsPlainAndGzipImages) {
  TempDir dir;
  const std::vector<uint32_t> dims = {3, 4, 5};
  const std::vector<uint8_t> data = Pattern(60);
  const std::vector<uint8_t> file = EncodeIdx(dims, data);
  ASSERT_EQ(file.size(), 16u + 60u);
  EXPECT_EQ(file[3], 3);  // rank
  WriteFile(dir.File("img"), file);
  WriteGzFile(dir.File("img.gz"), file);
  // The .gz really is compressed data, not a copy.
  ASSERT_EQ(ReadAll(dir.File("img.gz"))[0], 0x1f);

  for (const char* name : {"img", "img.gz"}) {
    Result<IdxArray> a = ReadIdxFile(dir.File(name), {.expected_rank = 3});
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->dims, dims) << name;
    EXPECT_EQ(a->data, data) << name;
    EXPECT_EQ(a->num_elements(), 60u);
  }
}

TEST(IdxTest, ReadsLabelsAndParsesFromMemory) {
  const std::vector<uint32_t> dims = {7};
  const std::vector<uint8_t> labels = {0, 1, 2, 9, 4, 5, 6};
  const std::vector<uint8_t> file = EncodeIdx(dims, labels);
  EXPECT_EQ(file[2], kIdxTypeUbyte);
  Result<IdxArray> a = ParseIdx(file, "labels", {.expected_rank = 1});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dims, dims);
  EXPECT_EQ(a->data, labels);
}

TEST(IdxTest, MaxItemsReadsOnlyThePrefix) {
  TempDir dir;
  const std::vector<uint8_t> data = Pattern(60);
  WriteGzFile(dir.File("img.gz"), EncodeIdx(std::vector<uint32_t>{3, 4, 5}, data));
  Result<IdxArray> a = ReadIdxFile(dir.File("img.gz"), {.max_items = 2});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dims, (std::vector<uint32_t>{2, 4, 5}));
  EXPECT_EQ(a->data, std::vector<uint8_t>(data.begin(), data.begin() + 40));
  // Asking for more items than exist reads them all.
  a = ReadIdxFile(dir.File("img.gz"), {.max_items = 10});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dims[0], 3u);
}

TEST(IdxTest, MissingFileIsNotFound) {
  TempDir dir;
  Result<IdxArray> a = ReadIdxFile(dir.File("nope.gz"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(a.status().message(), HasSubstr(dir.File("nope.gz")));
}

TEST(IdxTest, WrongMagicNamesFileAndValue) {
  TempDir dir;
  std::vector<uint8_t> bad = {0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, 5};
  WriteFile(dir.File("bad"), bad);
  Result<IdxArray> a = ReadIdxFile(dir.File("bad"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr(dir.File("bad")), HasSubstr("wrong magic 0x12345678")));

  // A labels file where images are expected.
  WriteFile(dir.File("labels"), EncodeIdx(std::vector<uint32_t>{2}, std::vector<uint8_t>{1, 2}));
  a = ReadIdxFile(dir.File("labels"), {.expected_rank = 3});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr(dir.File("labels")), HasSubstr("wrong magic 0x00000801"),
                    HasSubstr("expected 0x00000803")));

  // Floats (type 0x0D) are valid IDX but not supported.
  std::vector<uint8_t> floats = Header(0x00000D01, {1});
  floats.insert(floats.end(), 4, 0);
  a = ParseIdx(floats, "floats.idx");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr("floats.idx"), HasSubstr("0x00000d01"), HasSubstr("type 0x0d")));
}

TEST(IdxTest, DimsMismatchIsCorruption) {
  TempDir dir;
  // The header says 2x3x3 = 18 bytes, but 20 follow.
  std::vector<uint8_t> file = Header(kIdxMagicUbyteRank3, {2, 3, 3});
  const std::vector<uint8_t> data = Pattern(20);
  file.insert(file.end(), data.begin(), data.end());
  WriteFile(dir.File("more"), file);
  WriteGzFile(dir.File("more.gz"), file);
  for (const char* name : {"more", "more.gz"}) {
    Result<IdxArray> a = ReadIdxFile(dir.File(name));
    ASSERT_FALSE(a.ok()) << name;
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
    EXPECT_THAT(a.status().message(), AllOf(HasSubstr(dir.File(name)), HasSubstr("dims mismatch"),
                                            HasSubstr("2 x 3 x 3"), HasSubstr("18 bytes")));
  }
}

TEST(IdxTest, TruncatedFileSaysExpectedAndGot) {
  TempDir dir;
  std::vector<uint8_t> file = Header(kIdxMagicUbyteRank3, {2, 3, 3});
  const std::vector<uint8_t> data = Pattern(10);
  file.insert(file.end(), data.begin(), data.end());
  WriteFile(dir.File("short"), file);
  WriteGzFile(dir.File("short.gz"), file);
  for (const char* name : {"short", "short.gz"}) {
    Result<IdxArray> a = ReadIdxFile(dir.File(name));
    ASSERT_FALSE(a.ok()) << name;
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
    EXPECT_THAT(a.status().message(),
                AllOf(HasSubstr(dir.File(name)), HasSubstr("truncated: expected 18 bytes"),
                      HasSubstr("got 10")));
  }
  // Cut inside the dimensions.
  WriteFile(dir.File("header"), std::vector<uint8_t>(file.begin(), file.begin() + 9));
  Result<IdxArray> a = ReadIdxFile(dir.File("header"));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr(dir.File("header")), HasSubstr("truncated IDX header"),
                    HasSubstr("expected 12 bytes of dimensions, got 5")));
  // An empty file.
  WriteFile(dir.File("empty"), std::vector<uint8_t>{});
  a = ReadIdxFile(dir.File("empty"));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("expected 4 magic bytes, got 0"));
}

TEST(IdxTest, CorruptGzipIsCorruption) {
  TempDir dir;
  const std::vector<uint8_t> file = EncodeIdx(std::vector<uint32_t>{10, 10, 10}, Pattern(1000));
  WriteGzFile(dir.File("good.gz"), file);
  const std::vector<uint8_t> gz = ReadAll(dir.File("good.gz"));
  ASSERT_GT(gz.size(), 30u);

  // A wrong CRC-32 in the trailer (the last 8 bytes are CRC-32 then length).
  std::vector<uint8_t> bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0xff;
  WriteFile(dir.File("crc.gz"), bad_crc);
  // Garbage after the gzip magic.
  std::vector<uint8_t> garbage = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3};
  garbage.insert(garbage.end(), 40, 0xff);
  WriteFile(dir.File("garbage.gz"), garbage);
  // The compressed stream cut in half.
  WriteFile(dir.File("cut.gz"), std::vector<uint8_t>(gz.begin(), gz.begin() + gz.size() / 2));

  for (const char* name : {"crc.gz", "garbage.gz", "cut.gz"}) {
    Result<IdxArray> a = ReadIdxFile(dir.File(name));
    ASSERT_FALSE(a.ok()) << name;
    EXPECT_EQ(a.status().code(), StatusCode::kCorruption) << a.status();
    EXPECT_THAT(a.status().message(), AllOf(HasSubstr(dir.File(name)), HasSubstr("gzip"))) << name;
  }
  EXPECT_TRUE(ReadIdxFile(dir.File("good.gz")).ok());
}

TEST(IdxTest, HugeDimsFailFastWithoutAllocating) {
  TempDir dir;
  // 2^31 x 2^31 x 1 elements (2^62 bytes), with 16 bytes of data behind the header.
  std::vector<uint8_t> file = Header(kIdxMagicUbyteRank3, {1u << 31, 1u << 31, 1});
  file.insert(file.end(), 16, 7);
  WriteFile(dir.File("huge"), file);
  WriteGzFile(dir.File("huge.gz"), file);
  for (const char* name : {"huge", "huge.gz"}) {
    LargestAllocation largest;
    Result<IdxArray> a = ReadIdxFile(dir.File(name));
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
    EXPECT_THAT(a.status().message(),
                AllOf(HasSubstr(dir.File(name)), HasSubstr("2147483648 x 2147483648 x 1"),
                      HasSubstr("cap of 100000000")));
    EXPECT_LT(largest.bytes(), 64u * 1024) << name;
  }
  // Eight dims of 2^32 - 1 would overflow a 128-bit product; still a clean error.
  std::vector<uint8_t> rank8 = Header(0x00000808, std::vector<uint32_t>(8, 0xffffffffu));
  Result<IdxArray> a = ParseIdx(rank8, "rank8");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  // A zero dim makes the array empty however large the others are.
  a = ParseIdx(Header(kIdxMagicUbyteRank3, {0, 1u << 31, 1u << 31}), "zero");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->num_elements(), 0u);
  EXPECT_TRUE(a->data.empty());
}

TEST(IdxTest, GzipClaimingMoreThanItHoldsDoesNotAllocateTheClaim) {
  TempDir dir;
  // Under the cap (99M elements), but the stream holds 10 bytes of data.
  std::vector<uint8_t> file = Header(kIdxMagicUbyteRank3, {99, 1000, 1000});
  file.insert(file.end(), 10, 1);
  WriteGzFile(dir.File("liar.gz"), file);
  LargestAllocation largest;
  Result<IdxArray> a = ReadIdxFile(dir.File("liar.gz"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kCorruption);
  EXPECT_THAT(a.status().message(),
              AllOf(HasSubstr("truncated: expected 99000000 bytes"), HasSubstr("got 10")));
  // One bounded chunk (1 MiB), not 99 MB.
  EXPECT_LE(largest.bytes(), size_t{2} << 20);
  EXPECT_GT(largest.bytes(), 0u);
}

TEST(IdxTest, CapIsConfigurable) {
  const std::vector<uint8_t> file = EncodeIdx(std::vector<uint32_t>{4, 5, 5}, Pattern(100));
  EXPECT_TRUE(ParseIdx(file, "f", {.max_elements = 100}).ok());
  Result<IdxArray> a = ParseIdx(file, "f", {.max_elements = 99});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(a.status().message(), HasSubstr("4 x 5 x 5 elements, over the cap of 99"));
}

// Reading reports its progress over the file's bytes, compressed or not (forced to log on every
// read here; a real read logs only past a second).
TEST(IdxTest, ReadingReportsItsProgressOverTheFilesBytes) {
  TempDir dir;
  const std::vector<uint8_t> file =
      EncodeIdx(std::vector<uint32_t>{3 << 10, 32, 32}, Pattern(size_t{3} << 20));
  WriteFile(dir.File("img"), file);
  WriteGzFile(dir.File("img.gz"), file);
  {
    testing::LogCapture log(LogLevel::kInfo);
    ASSERT_TRUE(ReadIdxFile(dir.File("img")).ok());
    EXPECT_EQ(log.lines(), std::vector<std::string>{}) << "quick: quiet";
  }
  testing::ForceProgressLines every_read;
  // The plain file is 3 MiB and 16 bytes; the .gz holds a repeating pattern, a few KiB.
  const double gz_kib = static_cast<double>(ReadAll(dir.File("img.gz")).size()) / 1024;
  const std::pair<std::string, std::string> files[] = {{"img", "3.0"},
                                                       {"img.gz", fmt::format("{:.1f}", gz_kib)}};
  for (const auto& [name, amount] : files) {
    testing::LogCapture log(LogLevel::kInfo);
    ASSERT_TRUE(ReadIdxFile(dir.File(name)).ok());
    const std::vector<std::string> lines = log.lines();
    ASSERT_GE(lines.size(), 2u) << name;
    const std::string prefix = "info|reading " + dir.File(name);
    const std::string unit = name == "img" ? " MiB" : " KiB";
    for (const std::string& line : lines) EXPECT_EQ(line.rfind(prefix, 0), 0u) << line;
    const std::string& last = lines[lines.size() - 2];
    EXPECT_EQ(last.rfind(prefix + ": " + amount + "/" + amount + unit + " (100%), ", 0), 0u)
        << last;
    EXPECT_EQ(lines.back().rfind(prefix + " done: " + amount + unit + " in ", 0), 0u)
        << lines.back();
  }
}

}  // namespace
}  // namespace tributary
