// DescribeTaskFailed: a client's TaskFailed (messages.h) as the text of a log line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "protocol/messages.h"

namespace tributary {

// Bytes of a TaskFailed's reason that a log line keeps (a peer may send 64 KiB of it).
inline constexpr size_t kMaxLoggedReasonBytes = 1024;

// `text` from a peer as a log line keeps it: cut at kMaxLoggedReasonBytes, a cut one ending
// with "...".
std::string CutForLog(std::string_view text);

// "fit task of round 3: INTERNAL: <reason>", the reason cut as CutForLog cuts it.
std::string DescribeTaskFailed(const TaskFailed& f);

}  // namespace tributary
