// RunOutputLock: the locks a run holds on what it writes (core/lock_file.h), so that two runs
// never write one output.checkpoint_dir, event log or final model at once.
//
// Acquire(run) takes, in this order:
//   - <output.checkpoint_dir>/LOCK, creating the directory, when the run keeps checkpoints;
//   - for output.event_log and output.final_model, when set and not directly in that directory
//     (the default: <checkpoint_dir>/events.jsonl and final.safetensors, which its lock covers):
//     "<file>.lock" next to the file, creating its directory.
// A run that finds one of them held fails to start with FailedPrecondition naming the key, the
// path and the process holding it (program, pid, host, since when): "output.checkpoint_dir
// runs/a is in use by another run (tributary-coordinator, pid 1234 on host edge-7, since ...;
// runs/a/LOCK is locked); give each run its own output.checkpoint_dir, or stop the other one
// first". The locks are released when the object is destroyed, or by the kernel when the process
// ends however it ends, so a run that died never blocks a new run or a --resume; the lock files
// stay behind.
//
// The run history (output.history) is not locked: runs share it by design, each its own record
// (history/run_history.h).
//
// Errors: that FailedPrecondition; IoError naming the path when a directory or lock file cannot be
// made. Thread-safe once made (it only holds the locks).
#pragma once

#include <memory>
#include <vector>

#include "coordinator/run_config.h"
#include "core/lock_file.h"
#include "tributary/result.h"

namespace tributary {

class RunOutputLock {
 public:
  static Result<std::unique_ptr<RunOutputLock>> Acquire(const RunConfig& run);

  // The lock files held, in the order taken.
  std::vector<std::string> paths() const;

 private:
  RunOutputLock() = default;
  std::vector<std::unique_ptr<LockFile>> locks_;
};

}  // namespace tributary
