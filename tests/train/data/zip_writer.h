// Writes ZIP archives in memory with libzip, for the .npz tests and the data fuzz corpus: each
// member stored, deflated, or compressed with another method libzip can write. Aborts on a libzip
// failure (test code).
#pragma once

#include <zip.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace tributary::testing_util {

struct ZipMember {
  std::string name;
  std::vector<uint8_t> bytes;
  int32_t method = ZIP_CM_STORE;  // ZIP_CM_STORE, ZIP_CM_DEFLATE, ...
};

inline void ZipCheck(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "zip_writer: %s failed\n", what);
    std::abort();
  }
}

inline std::vector<uint8_t> MakeZip(const std::vector<ZipMember>& members) {
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* out = zip_source_buffer_create(nullptr, 0, 0, &err);
  ZipCheck(out != nullptr, "zip_source_buffer_create");
  zip_source_keep(out);  // kept past zip_close, to read the archive back
  zip_t* za = zip_open_from_source(out, ZIP_TRUNCATE, &err);
  ZipCheck(za != nullptr, "zip_open_from_source");
  for (const ZipMember& m : members) {
    zip_source_t* s = zip_source_buffer(za, m.bytes.data(), m.bytes.size(), 0);
    ZipCheck(s != nullptr, "zip_source_buffer");
    const zip_int64_t i = zip_file_add(za, m.name.c_str(), s, ZIP_FL_OVERWRITE);
    ZipCheck(i >= 0, "zip_file_add");
    ZipCheck(zip_set_file_compression(za, static_cast<zip_uint64_t>(i), m.method, 0) == 0,
             "zip_set_file_compression");
  }
  ZipCheck(zip_close(za) == 0, "zip_close");
  zip_stat_t st;
  zip_stat_init(&st);
  ZipCheck(zip_source_stat(out, &st) == 0 && (st.valid & ZIP_STAT_SIZE), "zip_source_stat");
  std::vector<uint8_t> bytes(st.size);
  ZipCheck(zip_source_open(out) == 0, "zip_source_open");
  ZipCheck(zip_source_read(out, bytes.data(), bytes.size()) == static_cast<zip_int64_t>(st.size),
           "zip_source_read");
  zip_source_close(out);
  zip_source_free(out);
  zip_error_fini(&err);
  return bytes;
}

}  // namespace tributary::testing_util
