// Child processes for integration tests: spawn a real binary with its output in a log file,
// signal it, and wait for it with a bound.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tributary::testing {

class Process {
 public:
  // Starts argv[0] with the given arguments; stdout and stderr go to `log_path`. Aborts the test
  // binary if fork/exec fails (a broken test environment, not a test outcome).
  Process(std::vector<std::string> argv, const std::string& log_path);
  ~Process();  // SIGKILLs the process if it is still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  // The exit code (or 128 + signal) once it exits; nullopt when still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  bool running();
  const std::string& log_path() const { return log_path_; }
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
};

// Polls `predicate` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds timeout);

}  // namespace tributary::testing
