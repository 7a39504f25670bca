// libFuzzer entry point for the parsers of users' data files (train/data/): NPY (npy.h), NPZ
// archives through libzip (npz.h) and CSV tables (csv.h). Input layout:
//   byte 0      which parser: 0 NPY, 1 NPZ, 2 CSV (modulo 3)
//   byte 1      NPY/NPZ: max_items (0: all); CSV: the label column option (below)
//   the rest    the file's bytes
// Besides "no crash, no sanitizer report" (and no allocation beyond the caps: the caps are small
// here, so an unchecked header shows up as a large allocation), it aborts when a property breaks:
//   - a rejection is Corruption, InvalidArgument, OutOfRange, or (NPZ, no such array) NotFound,
//     and its message names the input;
//   - an accepted array holds exactly shape x item size bytes, within the cap, re-encodes with
//     EncodeNpy to bytes that parse back to the same array, and its header parses alone to the
//     same dtype and shape; conversions to floats give finite values, to labels one per element;
//   - an accepted CSV table holds rows x features finite values and one label per row, and its
//     header, when it has one, names every column.
// Built with clang as data_fuzzer, and with any compiler into data_fuzz_replay, which ctest runs
// over data_corpus/ (regenerate with data_make_corpus tests/fuzz/data_corpus).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/csv.h"
#include "train/data/npy.h"
#include "train/data/npz.h"

namespace {

using namespace tributary;

constexpr std::string_view kName = "fuzz-input";
constexpr uint64_t kMaxElements = 1 << 20;

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property broken: %s\n", what);
    std::abort();
  }
}

void CheckRejection(const Status& s, bool npz) {
  const StatusCode c = s.code();
  Require(c == StatusCode::kCorruption || c == StatusCode::kInvalidArgument ||
              c == StatusCode::kOutOfRange || (npz && c == StatusCode::kNotFound),
          "a rejection is Corruption, InvalidArgument, OutOfRange or (npz) NotFound");
  Require(s.message().find(kName) != std::string::npos, "a rejection names the input");
}

void CheckArray(const NpyArray& a, const NpyReadOptions& opt) {
  uint64_t n = 1;
  for (uint64_t d : a.shape) n *= d;
  Require(n <= kMaxElements, "an accepted array is within the cap");
  Require(a.data.size() == n * NpyItemSize(a.dtype), "data holds shape x item size bytes");
  if (opt.max_items > 0 && !a.shape.empty()) Require(a.shape[0] <= opt.max_items, "max_items");
  const std::vector<uint8_t> again = EncodeNpy(a.dtype, a.shape, a.data);
  Result<NpyArray> b = ParseNpy(again, kName, opt);
  Require(b.ok(), "an encoded array parses");
  Require(b->dtype == a.dtype && b->shape == a.shape && b->data == a.data,
          "an encoded array parses back to itself");
  Result<NpyHeader> h = ParseNpyHeader(again, kName, opt);
  Require(h.ok() && h->dtype == a.dtype && h->shape == a.shape, "the header parses alone");
  Result<std::vector<float>> f = NpyToFloats(a, kName, true);
  if (f.ok()) {
    Require(f->size() == n, "one float per element");
    for (float v : *f) Require(std::isfinite(v), "floats are finite");
  } else {
    CheckRejection(f.status(), false);
  }
  Result<std::vector<uint8_t>> l = NpyToLabels(a, kName);
  if (l.ok())
    Require(l->size() == n, "one label per element");
  else
    CheckRejection(l.status(), false);
}

void FuzzNpy(std::span<const uint8_t> bytes, uint8_t max_items) {
  const NpyReadOptions opt{.max_elements = kMaxElements, .max_items = max_items};
  Result<NpyArray> a = ParseNpy(bytes, kName, opt);
  Result<NpyHeader> h = ParseNpyHeader(bytes, kName, opt);
  if (!a.ok()) {
    CheckRejection(a.status(), false);
    if (!h.ok()) CheckRejection(h.status(), false);
    return;
  }
  Require(h.ok() && h->dtype == a->dtype, "an accepted array's header parses alone");
  CheckArray(*a, opt);
  Result<NpyArray> taken = TakeNpy(std::vector<uint8_t>(bytes.begin(), bytes.end()), kName, opt);
  Require(taken.ok() && taken->data == a->data && taken->shape == a->shape,
          "TakeNpy agrees with ParseNpy");
}

void FuzzNpz(std::span<const uint8_t> bytes, uint8_t max_items) {
  const NpyReadOptions opt{.max_elements = kMaxElements, .max_items = max_items};
  for (const char* key : {"x", "y"}) {
    Result<NpyArray> a = ParseNpzArray(bytes, kName, key, opt);
    if (a.ok())
      CheckArray(*a, opt);
    else
      CheckRejection(a.status(), true);
  }
}

void FuzzCsv(std::string_view text, uint8_t option) {
  CsvReadOptions opt;
  opt.max_line_bytes = 4096;
  opt.max_columns = 256;
  opt.max_elements = kMaxElements;
  // The label column: the default, an index, or a name.
  const char* columns[] = {"", "0", "1", "label", "y", "99999999999999999999999"};
  opt.label_column = columns[option % 6];
  opt.max_items = option / 6 % 4;
  Result<CsvTable> t = ParseCsv(text, kName, opt);
  if (!t.ok()) {
    CheckRejection(t.status(), false);
    return;
  }
  Require(t->labels.size() == static_cast<size_t>(t->rows), "one label per row");
  Require(t->values.size() == static_cast<size_t>(t->rows * t->features), "rows x features values");
  for (float v : t->values) Require(std::isfinite(v), "values are finite");
  if (t->rows > 0 || !t->header.empty()) {
    Require(t->features >= 1, "at least one feature column");
    Require(t->label_column >= 0 && t->label_column <= t->features, "the label column exists");
  }
  if (!t->header.empty())
    Require(t->header.size() == static_cast<size_t>(t->features + 1), "the header names columns");
  if (opt.max_items > 0) Require(static_cast<uint64_t>(t->rows) <= opt.max_items, "max_items");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::span<const uint8_t> rest(data + 2, size - 2);
  switch (data[0] % 3) {
    case 0:
      FuzzNpy(rest, data[1]);
      break;
    case 1:
      FuzzNpz(rest, data[1]);
      break;
    default:
      FuzzCsv(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()), data[1]);
  }
  return 0;
}
