// Writes the seed corpus for data_fuzz into the directory given as argv[1]: valid .npy files of
// every dtype and header version, .npz archives stored and deflated, CSV tables with and without a
// header, and the bad inputs the data tests cover (big-endian and structured dtypes, Fortran order,
// malformed headers, huge shapes, truncations, a lying ZIP directory, ragged and non-numeric CSV
// rows). Run once by hand (data_make_corpus tests/fuzz/data_corpus); the output is committed.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "tests/train/data/zip_writer.h"
#include "train/data/npy.h"

namespace {

using namespace tributary;
using Bytes = std::vector<uint8_t>;
using testing_util::MakeZip;

Bytes Input(uint8_t parser, uint8_t option, const Bytes& payload) {
  Bytes b(2 + payload.size());
  b[0] = parser;
  b[1] = option;
  std::copy(payload.begin(), payload.end(), b.begin() + 2);
  return b;
}

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A .npy with the header text given as is.
Bytes HandNpy(int major, const std::string& header, size_t data_bytes) {
  Bytes out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i * 37));
  return out;
}

Bytes Npy(NpyDtype t, std::vector<uint64_t> shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  Bytes data(n * NpyItemSize(t));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i % 3);
  return EncodeNpy(t, shape, data);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  auto put = [&](const std::string& name, const Bytes& b) {
    Status s = WriteFileAtomic(dir + "/" + name, b);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::exit(1);
    }
    ++written;
  };
  const NpyDtype all[] = {NpyDtype::kBool, NpyDtype::kU8,  NpyDtype::kI8,  NpyDtype::kU16,
                          NpyDtype::kI16,  NpyDtype::kU32, NpyDtype::kI32, NpyDtype::kU64,
                          NpyDtype::kI64,  NpyDtype::kF32, NpyDtype::kF64};
  for (NpyDtype t : all) {
    std::string d(NpyDescr(t).substr(1));
    put("npy_" + d, Input(0, 0, Npy(t, {4, 3})));
  }
  put("npy_images", Input(0, 2, Npy(NpyDtype::kU8, {5, 2, 2, 3})));
  put("npy_scalar", Input(0, 0, Npy(NpyDtype::kF64, {})));
  put("npy_empty", Input(0, 0, Npy(NpyDtype::kF32, {0, 7})));
  const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }\n";
  put("npy_v2", Input(0, 0, HandNpy(2, h, 16)));
  put("npy_v3", Input(0, 0, HandNpy(3, h, 16)));
  put("npy_py2_long",
      Input(0, 0, HandNpy(1, "{'descr':'<i8','fortran_order':False,'shape':(2L,)}", 16)));
  put("bad_npy_big_endian",
      Input(0, 0, HandNpy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)));
  put("bad_npy_structured",
      Input(0, 0,
            HandNpy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8)));
  put("bad_npy_fortran",
      Input(0, 0, HandNpy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16)));
  put("bad_npy_huge",
      Input(0, 0,
            HandNpy(1,
                    "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, "
                    "4294967296, 4294967296), }",
                    16)));
  put("bad_npy_truncated", Input(0, 0, HandNpy(1, h, 15)));
  put("bad_npy_trailing", Input(0, 0, HandNpy(1, h, 17)));
  put("bad_npy_duplicate_key",
      Input(0, 0, HandNpy(1, "{'descr': '<f4', 'descr': '<f4', 'shape': (1,)}", 4)));
  put("bad_npy_header_len",
      Input(0, 0, {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0x7f}));
  put("bad_npy_nan",
      Input(0, 0,
            EncodeNpy(NpyDtype::kF32, std::vector<uint64_t>{1}, Bytes{0x00, 0x00, 0xc0, 0x7f})));

  const Bytes x = Npy(NpyDtype::kU8, {3, 2, 2}), y = Npy(NpyDtype::kI64, {3});
  put("npz_stored", Input(1, 0, MakeZip({{"x.npy", x}, {"y.npy", y}})));
  put("npz_deflated",
      Input(1, 2, MakeZip({{"x.npy", x, ZIP_CM_DEFLATE}, {"y.npy", y, ZIP_CM_DEFLATE}})));
  put("npz_other_member", Input(1, 0, MakeZip({{"a.npy", x}, {"notes.txt", Text("hi")}})));
  Bytes lying = MakeZip({{"x.npy", x, ZIP_CM_DEFLATE}});
  const uint8_t central[] = {0x50, 0x4b, 0x01, 0x02};
  auto at = std::search(lying.begin(), lying.end(), std::begin(central), std::end(central));
  if (at != lying.end()) at[24] ^= 0x40;  // the uncompressed size the directory gives
  put("bad_npz_size_lie", Input(1, 0, lying));
  Bytes crc = MakeZip({{"x.npy", x}});
  crc[crc.size() / 3] ^= 0x11;
  put("bad_npz_flipped_byte", Input(1, 0, crc));
  put("bad_npz_not_zip", Input(1, 0, x));

  put("csv_header", Input(2, 0, Text("a,b,label\n0.5,1,2\n-1e3,+2,0\n")));
  put("csv_no_header", Input(2, 0,
                             Text("\xEF\xBB\xBF"
                                  "1,2,3\r\n\r\n4,5,6\r\n")));
  put("csv_label_name", Input(2, 4, Text("y,f\n1,0.25\n0,0.5\n")));
  put("csv_label_index", Input(2, 1, Text("\"x\",\"y\"\n1,2\n3,4")));
  put("csv_max_items", Input(2, 12, Text("1,2\n3,4\n5,6\n7,8\n")));
  put("bad_csv_cell", Input(2, 0, Text("a,label\n1,0\nabc,1\n")));
  put("bad_csv_ragged", Input(2, 0, Text("1,2,0\n1,2\n")));
  put("bad_csv_label", Input(2, 0, Text("1,2,0.5\n1,2,256\n")));
  put("bad_csv_quote", Input(2, 0, Text("a,b\n\"1,2\",3\n")));
  put("bad_csv_one_column", Input(2, 0, Text("label\n1\n")));
  std::printf("wrote %d inputs to %s\n", written, dir.c_str());
  return 0;
}
