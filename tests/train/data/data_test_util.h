// Helpers for the data tests: a temporary directory and writers for plain and gzip files.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace tributary::testing_util {

// A fresh directory under the test temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "tributary_data_XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    if (made == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// Writes `bytes` gzip-compressed with zlib's gz* API.
inline void WriteGzFile(const std::string& path, std::span<const uint8_t> bytes) {
  gzFile f = gzopen(path.c_str(), "wb6");
  ASSERT_NE(f, nullptr) << "gzopen " << path;
  size_t done = 0;
  while (done < bytes.size()) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes.size() - done, 1u << 20));
    ASSERT_EQ(gzwrite(f, bytes.data() + done, chunk), static_cast<int>(chunk));
    done += chunk;
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

inline std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tributary::testing_util
