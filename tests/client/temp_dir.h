// TempDir: a fresh directory under the system temp dir (mkdtemp), removed with its contents.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/check.h"

namespace tributary::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "trib-client-XXXXXX").string();
    TRIB_CHECK(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace tributary::testing
