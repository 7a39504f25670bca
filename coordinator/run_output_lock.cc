#include "coordinator/run_output_lock.h"

#include <filesystem>
#include <system_error>

namespace tributary {
namespace {

namespace fs = std::filesystem;

// True when `file` is directly in `dir` (both as they are on disk: a relative path, a symbolic
// link or "dir/./x" name the same place).
bool DirectlyIn(const std::string& file, const std::string& dir) {
  if (dir.empty()) return false;
  fs::path parent = fs::path(file).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  return fs::equivalent(parent, dir, ec) && !ec;
}

}  // namespace

Result<std::unique_ptr<RunOutputLock>> RunOutputLock::Acquire(const RunConfig& run) {
  std::unique_ptr<RunOutputLock> lock(new RunOutputLock());
  if (!run.checkpoint_dir.empty()) {
    TRIB_ASSIGN_OR_RETURN(
        std::unique_ptr<LockFile> dir,
        LockFile::AcquireDir(run.checkpoint_dir,
                             {"output.checkpoint_dir " + run.checkpoint_dir, "another run",
                              "give each run its own output.checkpoint_dir, or stop the other "
                              "one first"}));
    lock->locks_.push_back(std::move(dir));
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"output.event_log", &run.event_log}, {"output.final_model", &run.final_model}};
  for (const auto& [key, path] : files) {
    if (path->empty() || DirectlyIn(*path, run.checkpoint_dir)) continue;
    const fs::path parent = fs::path(*path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec)
      return Status::IoError(std::string(key) + " " + *path + ": cannot create " + parent.string() +
                             ": " + ec.message());
    TRIB_ASSIGN_OR_RETURN(
        std::unique_ptr<LockFile> file,
        LockFile::Acquire(*path + ".lock", {std::string(key) + " " + *path, "another run",
                                            std::string("give each run its own ") + key +
                                                ", or stop the other "
                                                "one first"}));
    lock->locks_.push_back(std::move(file));
  }
  return lock;
}

std::vector<std::string> RunOutputLock::paths() const {
  std::vector<std::string> out;
  for (const auto& l : locks_) out.push_back(l->path());
  return out;
}

}  // namespace tributary
