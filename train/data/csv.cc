#include "train/data/csv.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "core/progress.h"

namespace tributary {
namespace {

constexpr size_t kReadChunk = size_t{1} << 20;

// A cell as it can be shown in a message: at most 40 characters, non-printable bytes as \xNN.
std::string Shown(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (s.size() > 40) out += "...";
  return out;
}

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Parses a whole cell as a number; false when it is not one.
bool ParseNumber(std::string_view s, double* out) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() == '-' || s.front() == '+') return false;
  }
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (end != s.data() + s.size()) return false;
  if (ec == std::errc()) return true;
  if (ec != std::errc::result_out_of_range) return false;
  // from_chars leaves *out alone when the value over- or underflows a double; strtod gives the
  // infinity or the tiny value, so the range check below can say which.
  const std::string copy(s);
  *out = std::strtod(copy.c_str(), nullptr);
  return true;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class CsvParser {
 public:
  CsvParser(std::string_view name, const CsvReadOptions& opt) : name_(name), opt_(opt) {}

  // True once max_items examples have been read.
  bool full() const {
    return opt_.max_items > 0 && static_cast<uint64_t>(t_.rows) >= opt_.max_items;
  }

  // One line without its '\n'; `line` counts from 1.
  Status Line(std::string_view text, int64_t line) {
    if (text.size() > opt_.max_line_bytes) return TooLong(line);
    if (line == 1 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (Trim(text).empty()) return Status::Ok();
    TRIB_RETURN_IF_ERROR(Split(text, line));
    if (columns_ == 0) return First(line);
    return Row(line);
  }

  Status TooLong(int64_t line) const {
    return Status::OutOfRange(fmt::format("{} line {}: longer than the cap of {} bytes", name_,
                                          line, opt_.max_line_bytes));
  }

  CsvTable Finish() && { return std::move(t_); }

 private:
  Status At(int64_t line, size_t column, const std::string& what) const {
    return Status::InvalidArgument(
        fmt::format("{} line {} column {}: {}", name_, line, column + 1, what));
  }

  // Fills cells_ with the trimmed, unquoted cells of `text`.
  Status Split(std::string_view text, int64_t line) {
    cells_.clear();
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      if (cells_.size() == opt_.max_columns)
        return Status::OutOfRange(fmt::format("{} line {}: more than the cap of {} columns", name_,
                                              line, opt_.max_columns));
      std::string_view cell =
          Trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
      if (!cell.empty() && cell.front() == '"') {
        if (cell.size() < 2 || cell.back() != '"')
          return At(line, cells_.size(),
                    fmt::format("{} opens a quote that the cell does not close (quoted commas are "
                                "not supported)",
                                Shown(cell)));
        cell = cell.substr(1, cell.size() - 2);
      }
      cells_.push_back(cell);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return Status::Ok();
  }

  // The first non-blank line: a header or the first example; fixes the columns and the label.
  Status First(int64_t line) {
    if (cells_.size() < 2)
      return Status::InvalidArgument(fmt::format(
          "{} line {}: {} column; a labeled CSV needs a label column and at least one feature "
          "column",
          name_, line, cells_.size()));
    columns_ = static_cast<int64_t>(cells_.size());
    first_line_ = line;
    t_.features = columns_ - 1;
    // A header has a cell that is not a number. An empty cell does not make one (that is a bad
    // example), though a header may have empty names too (pandas' index column).
    double v = 0;
    const bool header = std::any_of(cells_.begin(), cells_.end(), [&](std::string_view c) {
      return !c.empty() && !ParseNumber(c, &v);
    });
    if (header)
      for (std::string_view c : cells_) t_.header.emplace_back(c);
    TRIB_RETURN_IF_ERROR(ResolveLabelColumn());
    return header ? Status::Ok() : Row(line);
  }

  Status ResolveLabelColumn() {
    const std::string& want = opt_.label_column;
    if (want.empty()) {
      const auto it = std::find(t_.header.begin(), t_.header.end(), "label");
      t_.label_column = it != t_.header.end() ? it - t_.header.begin() : columns_ - 1;
      return Status::Ok();
    }
    if (AllDigits(want)) {
      uint64_t index = 0;
      const auto [end, ec] = std::from_chars(want.data(), want.data() + want.size(), index);
      if (ec != std::errc() || index >= static_cast<uint64_t>(columns_))
        return Status::InvalidArgument(
            fmt::format("{}: label column {} (0-based) is out of range: line {} has {} columns",
                        name_, Shown(want), first_line_, columns_));
      t_.label_column = static_cast<int64_t>(index);
      return Status::Ok();
    }
    if (t_.header.empty())
      return Status::InvalidArgument(fmt::format(
          "{}: label column '{}' is a name, but the file has no header row (line {} is all "
          "numbers); give the column's 0-based index instead",
          name_, Shown(want), first_line_));
    const auto it = std::find(t_.header.begin(), t_.header.end(), want);
    if (it == t_.header.end())
      return Status::InvalidArgument(fmt::format("{}: no column named '{}' in the header (line {})",
                                                 name_, Shown(want), first_line_));
    t_.label_column = it - t_.header.begin();
    return Status::Ok();
  }

  Status Row(int64_t line) {
    if (static_cast<int64_t>(cells_.size()) != columns_)
      return Status::InvalidArgument(
          fmt::format("{} line {}: {} columns, expected {} (as on line {})", name_, line,
                      cells_.size(), columns_, first_line_));
    const uint64_t after = static_cast<uint64_t>(t_.rows + 1) * static_cast<uint64_t>(t_.features);
    if (after > opt_.max_elements)
      return Status::OutOfRange(fmt::format("{} line {}: more than the cap of {} feature values",
                                            name_, line, opt_.max_elements));
    const size_t label = static_cast<size_t>(t_.label_column);
    for (size_t c = 0; c < cells_.size(); ++c) {
      double v = 0;
      if (!ParseNumber(cells_[c], &v))
        return At(line, c,
                  cells_[c].empty() ? std::string("the cell is empty, not a number")
                                    : fmt::format("'{}' is not a number", Shown(cells_[c])));
      if (c == label) {
        if (!(v >= 0 && v <= 255 && v == std::floor(v)))
          return At(line, c,
                    fmt::format("label '{}' is not an integer in [0, 255] (at most 256 classes)",
                                Shown(cells_[c])));
        t_.labels.push_back(static_cast<uint8_t>(v));
        continue;
      }
      if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max())
        return At(line, c, fmt::format("'{}' is not a finite float32 value", Shown(cells_[c])));
      t_.values.push_back(static_cast<float>(v));
    }
    ++t_.rows;
    return Status::Ok();
  }

  std::string_view name_;
  const CsvReadOptions& opt_;
  CsvTable t_;
  std::vector<std::string_view> cells_;
  int64_t columns_ = 0;  // 0 until the first non-blank line
  int64_t first_line_ = 0;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

Result<CsvTable> ParseCsv(std::string_view text, std::string_view name,
                          const CsvReadOptions& options) {
  CsvParser p(name, options);
  int64_t line = 0;
  size_t start = 0;
  while (start < text.size() && !p.full()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    TRIB_RETURN_IF_ERROR(p.Line(text.substr(start, end - start), ++line));
    start = end + 1;
  }
  return std::move(p).Finish();
}

Result<CsvTable> ReadCsvFile(const std::string& path, const CsvReadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::IoError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument("not a regular file: " + path);
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return Status::IoError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));

  CsvParser p(path, options);
  // Progress over the file's bytes, checked once per chunk read (1 MiB of text to parse).
  Progress::Options every_chunk = Progress::Defaults();
  every_chunk.check_every = 1;
  Progress progress("reading " + path, static_cast<uint64_t>(st.st_size), "bytes", every_chunk);
  // `pending` holds the start of a line whose end has not been read yet: at most
  // max_line_bytes plus one chunk.
  std::string pending;
  std::vector<char> chunk(kReadChunk);
  int64_t line = 0;
  while (!p.full()) {
    const size_t got = std::fread(chunk.data(), 1, chunk.size(), f.get());
    if (got == 0) {
      if (std::ferror(f.get()))
        return Status::IoError(fmt::format("{}: read failed: {}", path, std::strerror(errno)));
      if (!pending.empty()) TRIB_RETURN_IF_ERROR(p.Line(pending, ++line));
      break;
    }
    pending.append(chunk.data(), got);
    progress.Advance(got);
    size_t start = 0;
    for (size_t nl; !p.full() && (nl = pending.find('\n', start)) != std::string::npos;
         start = nl + 1)
      TRIB_RETURN_IF_ERROR(p.Line(std::string_view(pending).substr(start, nl - start), ++line));
    if (p.full()) break;
    // What is left is the start of one line.
    pending.erase(0, start);
    if (pending.size() > options.max_line_bytes) return p.TooLong(line + 1);
  }
  Result<CsvTable> table = std::move(p).Finish();
  if (table.ok()) progress.Done();
  return table;
}

}  // namespace tributary
