#include "protocol/security_log.h"

#include <algorithm>

#include "core/log.h"

namespace tributary {

SecurityLog::SecurityLog(std::chrono::seconds window)
    : window_(window), window_start_(Clock::now()) {}

SecurityLog::~SecurityLog() { Flush(/*force=*/true); }

void SecurityLog::Note(std::string_view reason, std::string_view source, std::string_view detail,
                       Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now - window_start_ >= window_) FlushLocked(now);
  ++totals_[std::string(reason)];
  Pending& p = pending_[{std::string(reason), std::string(source)}];
  if (p.shown == 0) {
    ++p.shown;
    p.shown_detail = std::string(detail.substr(0, kSummaryDetailBytes));
    Log().warn("security: {} from {}{}{}", reason, source, detail.empty() ? "" : ": ", detail);
    return;
  }
  ++p.counted;
  const std::string_view cut = detail.substr(0, kSummaryDetailBytes);
  if (cut.empty() || cut == p.shown_detail ||
      std::find(p.details.begin(), p.details.end(), cut) != p.details.end())
    return;
  if (p.details.size() < kSummaryDetails)
    p.details.emplace_back(cut);
  else
    p.more_details = true;
}

void SecurityLog::Flush(bool force, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (force || now - window_start_ >= window_) FlushLocked(now);
}

void SecurityLog::FlushLocked(Clock::time_point now) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - window_start_);
  for (const auto& [key, p] : pending_) {
    if (p.counted == 0) continue;
    std::string others;
    for (const std::string& d : p.details) others += (others.empty() ? "; others: " : "; ") + d;
    if (p.more_details) others += "; ...";
    Log().warn("security: in the last {} s: {} more x '{}' from {} (1 shown above){}",
               seconds.count(), p.counted, key.first, key.second, others);
  }
  pending_.clear();
  window_start_ = now;
}

std::map<std::string, uint64_t> SecurityLog::Totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

std::string SourceAddress(std::string_view endpoint) {
  if (!endpoint.empty() && endpoint.front() == '[') {
    const size_t close = endpoint.find(']');
    return std::string(close == std::string_view::npos ? endpoint : endpoint.substr(1, close - 1));
  }
  const size_t colon = endpoint.rfind(':');
  return std::string(colon == std::string_view::npos ? endpoint : endpoint.substr(0, colon));
}

}  // namespace tributary
