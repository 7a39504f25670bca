#include "history/process_identity.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <sstream>
#include <string>

namespace tributary {
namespace {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// The state letter and start time of /proc/<pid>/stat; false when it cannot be read. The command
// name (field 2) is in parentheses and may hold spaces, so the fields are counted after its last
// ')'.
bool ReadStat(int64_t pid, char* state, int64_t* start_ticks) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  // Field 3 is the state; field 22 the start time.
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return false;
    if (i == 3) *state = field.empty() ? '?' : field[0];
  }
  try {
    *start_ticks = std::stoll(field);
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace

ProcessIdentity ThisProcess() {
  ProcessIdentity p;
  p.host = HostName();
  p.pid = static_cast<int64_t>(::getpid());
  char state = '?';
  if (!ReadStat(p.pid, &state, &p.start_ticks)) p.start_ticks = 0;
  return p;
}

bool ProcessMayBeRunning(const ProcessIdentity& p) {
  if (p.host != HostName() || p.pid <= 0 || p.pid > INT_MAX) return true;
  if (::kill(static_cast<pid_t>(p.pid), 0) != 0 && errno == ESRCH) return false;
  char state = '?';
  int64_t start = 0;
  if (!ReadStat(p.pid, &state, &start)) return true;  // no /proc: kill() said it exists
  if (state == 'Z' || state == 'X') return false;
  return p.start_ticks == 0 || start == p.start_ticks;
}

}  // namespace tributary
