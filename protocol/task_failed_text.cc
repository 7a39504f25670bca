#include "protocol/task_failed_text.h"

namespace tributary {

std::string CutForLog(std::string_view text) {
  if (text.size() <= kMaxLoggedReasonBytes) return std::string(text);
  return std::string(text.substr(0, kMaxLoggedReasonBytes)) + "...";
}

std::string DescribeTaskFailed(const TaskFailed& f) {
  const char* kind = f.evaluate() ? "evaluate" : f.fit() ? "fit" : "unknown";
  return std::string(kind) + " task of round " + std::to_string(f.round) + ": " +
         DescribeError(f.code, CutForLog(f.reason));
}

}  // namespace tributary
