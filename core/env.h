// Env: the file system seam (leveldb's idea). Code that reads or writes files takes an Env* so
// tests can substitute an in-memory one that injects faults and simulates crashes
// (tests/core/fault_injection_env.h); Env::Default() is the real POSIX file system.
//
//   TRIB_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f, env->NewWritableFile(path));
//   TRIB_RETURN_IF_ERROR(f->Append(bytes));
//   TRIB_RETURN_IF_ERROR(f->Sync());   // data durable
//   TRIB_RETURN_IF_ERROR(f->Close());
//   TRIB_RETURN_IF_ERROR(env->SyncDir(dir));  // the name durable (after a create or rename)
//
// Durability follows POSIX: appended data survives a crash only once the file is synced, and a
// new, renamed or removed name only once its directory is synced. WriteFileAtomic
// (core/file_util.h) composes these into a crash-safe replace.
//
// Errors are Status values naming the path: NotFound for a missing file, IoError with strerror for
// the rest. Default() is thread-safe and lives for the process; a WritableFile is used from one
// thread at a time and closed by its destructor if Close() was not called.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tributary/result.h"

namespace tributary {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::span<const uint8_t> data) = 0;
  // Makes everything appended so far durable (fsync).
  virtual Status Sync() = 0;
  virtual Status Close() = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The whole file; OutOfRange (before reading) when it is larger than max_bytes.
  virtual Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) = 0;
  // Creates `path`, or truncates it when it exists, for writing.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Opens `path` for appending, creating it when missing.
  virtual Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;
  // Atomically replaces `to` (if any) with `from`.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Makes the directory's entries durable (fsync of the directory).
  virtual Status SyncDir(const std::string& dir) = 0;
  // Creates `dir` and its missing parents; OK when it exists.
  virtual Status CreateDirs(const std::string& dir) = 0;
  virtual bool FileExists(const std::string& path) = 0;

  static Env* Default();
};

}  // namespace tributary
