#include "core/file_util.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/progress.h"

namespace tributary {

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path, uint64_t max_bytes) {
  return Env::Default()->ReadFile(path, max_bytes);
}

namespace {

// WriteFileAtomic, appending `bytes` whole (no progress) or in pieces that advance `progress`.
Status WriteAtomic(Env* env, const std::string& path, std::span<const uint8_t> bytes,
                   Progress* progress) {
  const std::string tmp = path + ".tmp";
  Status s = [&]() -> Status {
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env->NewWritableFile(tmp));
    if (progress == nullptr) {
      TRIB_RETURN_IF_ERROR(f->Append(bytes));
    } else {
      for (size_t at = 0; at < bytes.size(); at += kProgressPieceBytes) {
        const std::span<const uint8_t> piece =
            bytes.subspan(at, std::min(kProgressPieceBytes, bytes.size() - at));
        TRIB_RETURN_IF_ERROR(f->Append(piece));
        progress->Advance(piece.size());
      }
    }
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

}  // namespace

Status WriteFileAtomic(Env* env, const std::string& path, std::span<const uint8_t> bytes) {
  return WriteAtomic(env, path, bytes, nullptr);
}

Status WriteFileAtomic(Env* env, const std::string& path, std::span<const uint8_t> bytes,
                       Progress* progress) {
  return WriteAtomic(env, path, bytes, progress);
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

Status CheckReadableFile(std::string_view label, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  std::string why;
  if (!fs::exists(st))
    why = "no such file";
  else if (fs::is_directory(st))
    why = "a directory, not a file";
  else if (!fs::is_regular_file(st))
    why = "not a regular file";
  else if (::access(path.c_str(), R_OK) != 0)
    why = std::strerror(errno);
  if (why.empty()) return Status::Ok();
  return Status::NotFound(std::string(label) + ": cannot read " + path + ": " + why);
}

}  // namespace tributary
