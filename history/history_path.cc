#include "history/history_path.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace tributary {

std::string ResolveHistoryPath(const std::string& key_value) {
  namespace fs = std::filesystem;
  if (key_value == "none") return "";
  if (!key_value.empty()) return key_value;
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && fs::path(state).is_absolute())
    return (fs::path(state) / "tributary" / "history.db").string();
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    const passwd* pw = ::getpwuid(::getuid());
    home = pw != nullptr ? pw->pw_dir : nullptr;
  }
  if (home == nullptr || *home == '\0') return "";
  return (fs::path(home) / ".local" / "state" / "tributary" / "history.db").string();
}

}  // namespace tributary
