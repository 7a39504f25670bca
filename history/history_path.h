// Where the run history lives: the value of key output.history, resolved.
#pragma once

#include <string>

namespace tributary {

// "" (the key's default): $XDG_STATE_HOME/tributary/history.db, or ~/.local/state/tributary/
// history.db when XDG_STATE_HOME is unset or not absolute (the XDG base directory spec); "" when
// neither that nor a home directory is known. "none": "" (no history). Anything else: itself.
std::string ResolveHistoryPath(const std::string& key_value);

}  // namespace tributary
