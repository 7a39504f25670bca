#include "protocol/task_failed_text.h"

namespace tributary {

std::string DescribeTaskFailed(const TaskFailed& f) {
  std::string reason = f.reason;
  if (reason.size() > kMaxLoggedReasonBytes) {
    reason.resize(kMaxLoggedReasonBytes);
    reason += "...";
  }
  const char* kind = f.evaluate() ? "evaluate" : f.fit() ? "fit" : "unknown";
  return std::string(kind) + " task of round " + std::to_string(f.round) + ": " +
         DescribeError(f.code, reason);
}

}  // namespace tributary
