// TempDir: a fresh directory for one test, removed with everything in it when destroyed.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tributary::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "trib_history_XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path(const std::string& name = "") const {
    return name.empty() ? path_ : (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

}  // namespace tributary::testing
