#include "core/file_util.h"

#include <filesystem>

namespace tributary {

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes) {
  return Env::Default()->ReadFile(path, max_bytes);
}

Status WriteFileAtomic(Env* env, const std::string& path, std::span<const uint8_t> bytes) {
  const std::string tmp = path + ".tmp";
  Status s = [&]() -> Status {
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env->NewWritableFile(tmp));
    TRIB_RETURN_IF_ERROR(f->Append(bytes));
    TRIB_RETURN_IF_ERROR(f->Sync());
    TRIB_RETURN_IF_ERROR(f->Close());
    return env->RenameFile(tmp, path);
  }();
  if (!s.ok()) {
    (void)env->RemoveFile(tmp);
    return s;
  }
  return env->SyncDir(std::filesystem::path(path).parent_path().string());
}

Status WriteFileAtomic(const std::string& path, std::span<const uint8_t> bytes) {
  return WriteFileAtomic(Env::Default(), path, bytes);
}

Status WriteFileAtomic(Env* env, const std::string& path, std::string_view text) {
  return WriteFileAtomic(
      env, path,
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Status WriteFileAtomic(const std::string& path, std::string_view text) {
  return WriteFileAtomic(Env::Default(), path, text);
}

}  // namespace tributary
