// LockFile: an exclusive lock on a file (flock(2), LOCK_EX | LOCK_NB), held for as long as the
// object lives, that names the process holding it. It is what keeps two processes from sharing
// one directory of outputs: a client's state dir (client/client_state.h), a coordinator's
// output.checkpoint_dir, event log and final model (coordinator/run_output_lock.h), tributary-sim's
// sim.report_dir.
//
// Acquire(path, ...) opens (creating) `path` and locks it without waiting; AcquireDir(dir, ...)
// creates `dir` and its parents and locks <dir>/LOCK. The holder then writes who it is into the
// file, one JSON line: {"pid": 1234, "host": "edge-7", "program": "tributary-coordinator",
// "since": <unix seconds>}. When another process (or another LockFile in this one: the lock belongs
// to the open file description) holds it, Acquire fails with FailedPrecondition:
//   "<subject> is in use by <other> (tributary-coordinator, pid 1234 on host edge-7, since
//    2026-12-02 02:10:33 UTC; <path> is locked); <advice>"
//
// The kernel releases the lock when its holder exits, however it ends (SIGKILL included), so a
// lock file left behind by a dead process never blocks the next one: the file stays (removing it
// would race with a process locking it), and the next holder overwrites the record in it. flock
// is advisory and local to a host's kernel: it does not hold across machines sharing a network
// file system (on NFS it may fail with an IoError, naming the file).
//
// Errors: IoError naming the path when the directory or the file cannot be made, or locking fails
// for another reason than the lock being held; FailedPrecondition as above.
// Thread-safe: Acquire may be called from any thread; a LockFile is immutable.
#pragma once

#include <memory>
#include <string>

#include "tributary/result.h"

namespace tributary {

class LockFile {
 public:
  static constexpr const char* kDirLockName = "LOCK";
  // The lock file holds a small record; anything past this is not read.
  static constexpr size_t kMaxRecordBytes = 4096;

  // What the error says when the lock is held: "<subject> is in use by <other> (<holder>; <path>
  // is locked); <advice>", e.g. subject "output.checkpoint_dir /runs/a", other "another
  // coordinator", advice "give each run its own output.checkpoint_dir".
  struct Describe {
    std::string subject;
    std::string other = "another process";
    std::string advice;
  };

  static Result<std::unique_ptr<LockFile>> Acquire(const std::string& path,
                                                   const Describe& describe);
  static Result<std::unique_ptr<LockFile>> AcquireDir(const std::string& dir,
                                                      const Describe& describe);
  ~LockFile();  // releases the lock (the file stays)
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;

  const std::string& path() const { return path_; }

  // The holder that the record in the file at `path` names, for people: "tributary-coordinator,
  // pid 1234 on host edge-7, since 2026-12-02 02:10:33 UTC"; "a process that has not written its
  // name yet" when the file holds no record it can read.
  static std::string DescribeHolder(const std::string& path);

 private:
  LockFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
};

}  // namespace tributary
