// DescribeTaskFailed: a client's TaskFailed (messages.h) as the text of a log line.
#pragma once

#include <cstddef>
#include <string>

#include "protocol/messages.h"

namespace tributary {

// Bytes of a TaskFailed's reason that a log line keeps (a peer may send 64 KiB of it).
inline constexpr size_t kMaxLoggedReasonBytes = 1024;

// "fit task of round 3: INTERNAL: <reason>", the reason cut at kMaxLoggedReasonBytes and a cut
// one ending with "...".
std::string DescribeTaskFailed(const TaskFailed& f);

}  // namespace tributary
