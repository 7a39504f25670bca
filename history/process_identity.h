// Which process wrote a run record, and whether that process still runs: what lets the readers of
// the run history tell a live run from one whose writer died (SIGKILL, a crash, a power cut)
// without recording its end.
//
// A process is named by its host, its pid and the time it started (the `starttime` field of
// /proc/<pid>/stat, in clock ticks since boot), so that a pid the kernel has since given to
// another process does not pass for the writer. All functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace tributary {

struct ProcessIdentity {
  std::string host;
  int64_t pid = 0;
  int64_t start_ticks = 0;  // 0 when unknown (no /proc)
};

// This process: gethostname(), getpid() and its start time.
ProcessIdentity ThisProcess();

// False only when `p` ran on this host and is certainly gone: no such pid, a zombie, or a pid
// whose start time differs from the one recorded. A process on another host is assumed to run
// (there is no way to tell from here).
bool ProcessMayBeRunning(const ProcessIdentity& p);

}  // namespace tributary
