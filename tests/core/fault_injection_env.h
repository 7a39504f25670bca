// FaultInjectionEnv: an in-memory Env that simulates crashes, for testing crash safety.
//
// It keeps two views of the file system: what a running process sees, and what would survive a
// crash (power loss) right now. Following POSIX at its most pessimistic:
//   - appended bytes become durable when their file is synced;
//   - a created, renamed or removed name becomes durable when its directory is synced;
//   - truncating an existing file (NewWritableFile on it) is durable at once.
// Crash() throws away everything that is not durable: names revert to the last directory sync,
// and files to their last sync.
//
// Every call that changes the file system (create, append, sync, close, rename, remove, directory
// sync, directory creation) is a "write point". FailAfter(n) lets n more write points succeed;
// from then on every write point fails with IoError("simulated crash") and changes nothing, as if
// the process had died there. Crash() then also re-enables writes. Reads always work.
//
// Paths are compared as strings after lexical normalization. Files can be created only in
// directories made with CreateDirs, which are durable at once. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/env.h"

namespace tributary::testing {

class FaultInjectionEnv final : public Env {
 public:
  Result<std::vector<uint8_t>> ReadFile(const std::string& path, uint64_t max_bytes) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Status CreateDirs(const std::string& dir) override;
  bool FileExists(const std::string& path) override;

  // From now on, `n` more write points succeed and the rest fail.
  void FailAfter(int64_t n);
  // Write points that succeeded since construction.
  int64_t write_points() const;
  // Loses everything not durable and lets writes succeed again.
  void Crash();
  // The names a running process sees, sorted.
  std::vector<std::string> Files() const;

 private:
  class File;
  struct Inode {
    std::vector<uint8_t> data;    // what a running process reads
    std::vector<uint8_t> synced;  // what survives a crash
  };
  // OK and counts the write point, or the simulated crash. Called with mu_ held.
  Status WritePointLocked(const std::string& what);
  Status Append(const std::shared_ptr<Inode>& inode, std::span<const uint8_t> data,
                const std::string& path);
  Status Sync(const std::shared_ptr<Inode>& inode, const std::string& path);
  Status Close(const std::string& path);
  Result<std::unique_ptr<WritableFile>> Open(const std::string& path, bool truncate);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Inode>> names_;    // live view; guarded by mu_
  std::map<std::string, std::shared_ptr<Inode>> durable_;  // crash view; guarded by mu_
  std::set<std::string> dirs_;                             // guarded by mu_
  std::optional<int64_t> budget_;                          // guarded by mu_
  int64_t write_points_ = 0;                               // guarded by mu_
};

}  // namespace tributary::testing
