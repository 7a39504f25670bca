// CSV reader for labeled numeric tables: one row per example, one column holding its class label,
// every other column a feature.
//
// The format, kept deliberately small:
//   - cells are separated by ',' and may be padded with spaces or tabs; lines end in "\n" or
//     "\r\n"; blank lines are skipped; a UTF-8 byte-order mark at the start is skipped;
//   - a cell is a decimal number as std::from_chars reads it ("3", "-0.25", "1e-3", "+2"); a cell
//     in double quotes has them removed, but quoted cells may not hold commas;
//   - the first non-blank line is a header row (column names) when any of its non-empty cells is
//     not a number, and the first example otherwise;
//   - every row has as many cells as the first line;
//   - features must be finite and within float32's range; labels integers in [0, 255].
// The label column is CsvReadOptions::label_column: a 0-based column index (all digits), or the
// name of a header column; when empty, the header column named "label" if there is one, else the
// last column.
//
// The bytes are untrusted: a line longer than max_line_bytes, a row of more than max_columns
// cells, and more than max_elements feature values are errors (OutOfRange) raised before they are
// stored. Text is consumed line by line; ReadCsvFile never holds more than one line of it.
//
// Errors name the file (or the `name` given to ParseCsv), the line (1-based, as an editor counts)
// and the column (1-based):
//   "data/train.csv line 17 column 3: 'abc' is not a number"
//   NotFound / IoError  the file is missing or cannot be read
//   InvalidArgument     a bad cell, a ragged row, a bad label column, no feature columns
//   OutOfRange          over a cap
// All functions are thread-safe (they share no state).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/result.h"

namespace tributary {

struct CsvReadOptions {
  std::string label_column{};  // "", a 0-based index, or a header name (see above)
  uint64_t max_line_bytes = 1 << 20;
  uint64_t max_columns = 1 << 16;
  uint64_t max_elements = uint64_t{1} << 30;  // feature values in all
  // When > 0, read at most this many examples and stop there.
  uint64_t max_items = 0;
};

// The examples of a CSV table: features row after row, and their labels.
struct CsvTable {
  std::vector<std::string> header;  // the column names; empty when the file has no header row
  int64_t label_column = 0;         // 0-based index among all columns
  int64_t rows = 0;
  int64_t features = 0;         // columns other than the label's
  std::vector<float> values;    // rows x features, row-major
  std::vector<uint8_t> labels;  // one per row
};

// Parses CSV text held in memory. `name` labels error messages.
Result<CsvTable> ParseCsv(std::string_view text, std::string_view name,
                          const CsvReadOptions& options = {});

// Reads a CSV file, line by line. A read that takes more than a second logs its progress over the
// file's bytes (core/progress.h: "reading <path>: 12.0/40.0 MiB (30%), 1.0 s").
Result<CsvTable> ReadCsvFile(const std::string& path, const CsvReadOptions& options = {});

}  // namespace tributary
