#include "train/data/csv.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data_test_util.h"
#include "tests/core/log_capture.h"
#include "tests/core/progress_lines.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::TempDir;
using testing_util::WriteFile;

std::vector<uint8_t> AsBytes(const std::string& s) { return {s.begin(), s.end()}; }

Status ErrorOf(const std::string& text, const CsvReadOptions& opt = {}) {
  Result<CsvTable> t = ParseCsv(text, "data/train.csv", opt);
  return t.ok() ? Status::Ok() : t.status();
}

TEST(CsvTest, HeaderRowNamesTheLabelColumn) {
  Result<CsvTable> t = ParseCsv("a, label ,b\n1,0,2\n 3.5 ,2,-4e-1\n", "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->header, ElementsAre("a", "label", "b"));
  EXPECT_EQ(t->label_column, 1);
  EXPECT_EQ(t->rows, 2);
  EXPECT_EQ(t->features, 2);
  EXPECT_THAT(t->values, ElementsAre(1.0f, 2.0f, 3.5f, -0.4f));
  EXPECT_THAT(t->labels, ElementsAre(0, 2));
}

TEST(CsvTest, WithoutHeaderTheLastColumnIsTheLabel) {
  // CRLF line ends, a byte-order mark, blank lines, a leading '+'.
  Result<CsvTable> t = ParseCsv(
      "\xEF\xBB\xBF"
      "0.5,+1,3\r\n\r\n  \n2,1e2,7\r\n",
      "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->header.empty());
  EXPECT_EQ(t->label_column, 2);
  EXPECT_THAT(t->values, ElementsAre(0.5f, 1.0f, 2.0f, 100.0f));
  EXPECT_THAT(t->labels, ElementsAre(3, 7));
  // A header without a "label" column: the last one. Quoted names are unquoted.
  t = ParseCsv("\"x\",\"y\",\"class\"\n1,2,3\n", "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->header, ElementsAre("x", "y", "class"));
  EXPECT_EQ(t->label_column, 2);
  // pandas' index column has an empty name; the row is still a header.
  t = ParseCsv(",f,label\n0,1.5,1\n", "t.csv");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->header.size(), 3u);
  EXPECT_EQ(t->label_column, 2);
}

TEST(CsvTest, LabelColumnByNameOrIndex) {
  const std::string text = "y,f1,f2\n4,0.1,0.2\n5,0.3,0.4\n";
  Result<CsvTable> t = ParseCsv(text, "t.csv", {.label_column = "y"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->labels, ElementsAre(4, 5));
  EXPECT_THAT(t->values, ElementsAre(0.1f, 0.2f, 0.3f, 0.4f));
  t = ParseCsv(text, "t.csv", {.label_column = "0"});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->labels, ElementsAre(4, 5));
  // Errors.
  EXPECT_THAT(ErrorOf(text, {.label_column = "z"}).message(),
              HasSubstr("data/train.csv: no column named 'z' in the header (line 1)"));
  EXPECT_THAT(ErrorOf(text, {.label_column = "3"}).message(),
              HasSubstr("label column 3 (0-based) is out of range: line 1 has 3 columns"));
  EXPECT_THAT(ErrorOf("1,2\n", {.label_column = "y"}).message(),
              HasSubstr("label column 'y' is a name, but the file has no header row"));
  EXPECT_THAT(ErrorOf("1,2\n", {.label_column = "99999999999999999999999"}).message(),
              HasSubstr("out of range"));
}

TEST(CsvTest, BadCellsNameLineAndColumn) {
  const struct {
    std::string text;
    std::string want;
  } cases[] = {
      {"a,b,label\n1,2,0\n1,abc,0\n", "data/train.csv line 3 column 2: 'abc' is not a number"},
      {"1,2,0\n\n1,,0\n", "data/train.csv line 3 column 2: the cell is empty, not a number"},
      {"1,2,0\n1,2\n", "data/train.csv line 2: 2 columns, expected 3 (as on line 1)"},
      {"1,2,0\n1,2,3,4\n", "line 2: 4 columns, expected 3"},
      {"1,2,0.5\n", "line 1 column 3: label '0.5' is not an integer in [0, 255]"},
      {"1,2,256\n", "line 1 column 3: label '256' is not an integer"},
      {"1,2,-1\n", "label '-1' is not an integer"},
      {"h,label\nnan,1\n", "line 2 column 1: 'nan' is not a finite float32 value"},
      {"h,label\n1e39,1\n", "line 2 column 1: '1e39' is not a finite float32 value"},
      {"h,label\n1e-400,1\n0x10,1\n", "line 3 column 1: '0x10' is not a number"},
      {"h,label\n++1,1\n", "'++1' is not a number"},
      {"label\n1\n", "line 1: 1 column; a labeled CSV needs a label column and at least one"},
      {"a,b\n\"1,2\",3\n", "line 2 column 1: \"1 opens a quote"},
      {"a,b\n1\xff,3\n", "'1\\xff' is not a number"},
  };
  for (const auto& c : cases) {
    const Status s = ErrorOf(c.text);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(s.message(), HasSubstr(c.want)) << c.text;
  }
  // A tiny value underflows to (nearly) zero rather than failing.
  Result<CsvTable> t = ParseCsv("1e-400,1\n", "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->values[0], 0.0f);
}

TEST(CsvTest, CapsAreOutOfRange) {
  Status s = ErrorOf("1,2,0\n" + std::string(100, '1') + ",2,0\n", {.max_line_bytes = 50});
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("data/train.csv line 2: longer than the cap of 50 bytes"));
  s = ErrorOf("1,2,3,4,5\n", {.max_columns = 4});
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("line 1: more than the cap of 4 columns"));
  s = ErrorOf("1,2,0\n3,4,0\n5,6,0\n", {.max_elements = 5});
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  EXPECT_THAT(s.message(), HasSubstr("line 3: more than the cap of 5 feature values"));
  // max_items stops reading: the bad third row is never seen.
  Result<CsvTable> t = ParseCsv("1,2,0\n3,4,0\nx,6,0\n", "t", {.max_items = 2});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, 2);
}

TEST(CsvTest, ReadsFilesLineByLine) {
  TempDir dir;
  // Over two read chunks (1 MiB), with no trailing newline.
  std::string text = "f0,f1,label\n";
  int rows = 0;
  while (text.size() < (size_t{5} << 19)) {
    text += std::to_string(rows) + "," + std::to_string(rows % 7) + ".25," +
            std::to_string(rows % 10) + "\n";
    ++rows;
  }
  text += "1,2,3";
  ++rows;
  WriteFile(dir.File("big.csv"), AsBytes(text));
  Result<CsvTable> t = ReadCsvFile(dir.File("big.csv"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, rows);
  EXPECT_EQ(t->labels[123], 123 % 10);
  EXPECT_EQ(t->values[2 * 123 + 1], 123 % 7 + 0.25f);
  EXPECT_EQ(t->labels.back(), 3);
  // Reading stops there: what is left of the chunk read is not a line over the cap.
  t = ReadCsvFile(dir.File("big.csv"), {.max_line_bytes = 100, .max_items = 3});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows, 3);
  // Errors name the file and the line, counted across chunks.
  text.replace(text.rfind("1,2,3"), 5, "1,z,3");
  WriteFile(dir.File("bad.csv"), AsBytes(text));
  t = ReadCsvFile(dir.File("bad.csv"));
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              HasSubstr(dir.File("bad.csv") + " line " + std::to_string(rows + 1) +
                        " column 2: 'z' is not a number"));
  // A line longer than the cap, even when it spans chunks.
  WriteFile(dir.File("long.csv"), AsBytes("1,2\n" + std::string(3 << 20, '1') + ",2\n"));
  t = ReadCsvFile(dir.File("long.csv"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kOutOfRange);
  EXPECT_THAT(t.status().message(), HasSubstr("line 2: longer than the cap"));
  t = ReadCsvFile(dir.File("none.csv"));
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  // An empty file holds no rows (the data set loader says so).
  WriteFile(dir.File("empty.csv"), AsBytes(""));
  t = ReadCsvFile(dir.File("empty.csv"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows, 0);
}

// Reading a file reports its progress over the bytes read, one check per 1 MiB chunk (forced to log
// on every check here; a real read logs only past a second).
TEST(CsvTest, ReadingAFileReportsItsProgress) {
  TempDir dir;
  std::string text = "f0,label\n";
  for (int row = 0; text.size() < (size_t{5} << 19); ++row)
    text += std::to_string(row % 1000) + "," + std::to_string(row % 10) + "\n";
  text.resize(size_t{5} << 19);  // 2.5 MiB, cut at a line end or mid-number: both parse
  text.back() = '\n';
  WriteFile(dir.File("big.csv"), AsBytes(text));
  testing::LogCapture log(LogLevel::kInfo);
  ASSERT_TRUE(ReadCsvFile(dir.File("big.csv")).ok());
  EXPECT_EQ(log.lines(), std::vector<std::string>{}) << "quick: quiet";
  testing::ForceProgressLines every_check;
  ASSERT_TRUE(ReadCsvFile(dir.File("big.csv")).ok());
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 4u);
  const std::string prefix = "info|reading " + dir.File("big.csv");
  EXPECT_EQ(lines[0].rfind(prefix + ": 1.0/2.5 MiB (40%), ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind(prefix + ": 2.0/2.5 MiB (80%), ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind(prefix + ": 2.5/2.5 MiB (100%), ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind(prefix + " done: 2.5 MiB in ", 0), 0u) << lines[3];
}

}  // namespace
}  // namespace tributary
