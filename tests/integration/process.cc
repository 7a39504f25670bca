#include "tests/integration/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/core/emulator.h"

namespace tributary::testing {

Process::Process(std::vector<std::string> argv, const std::string& log_path) : log_path_(log_path) {
  // A cross build's programs run under the emulator that runs its tests.
  std::vector<std::string> prefix = EmulatorPrefix();
  argv.insert(argv.begin(), prefix.begin(), prefix.end());
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror("open log");
    std::abort();
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    std::perror("fork");
    std::abort();
  }
  if (pid_ == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setpgid(0, 0);
    ::execv(args[0], args.data());
    std::perror("execv");
    ::_exit(127);
  }
  ::close(fd);
}

Process::~Process() {
  if (running()) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

bool Process::running() {
  if (status_ || pid_ <= 0) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return false;
  }
  return true;
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  WaitFor([this] { return !running(); }, timeout);
  return status_;
}

std::string Process::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace tributary::testing
