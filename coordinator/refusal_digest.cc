#include "coordinator/refusal_digest.h"

namespace tributary {

RefusalDigest::RefusalDigest(Duration window, size_t max_groups)
    : window_(window), max_groups_(max_groups) {
  rest_.count = 0;
}

std::vector<ClientRefused> RefusalDigest::Note(ClientRefused refusal, TimePoint now) {
  std::vector<ClientRefused> out = Flush(now);
  if (!started_) {
    started_ = true;
    window_start_ = now;
  }
  if (refusal.reason.size() > kMaxReasonBytes) refusal.reason.resize(kMaxReasonBytes);
  refusal.count = 1;
  refusal.seconds = 0.0;
  const auto key = std::make_pair(refusal.client, refusal.code);
  auto it = groups_.find(key);
  if (it != groups_.end()) {
    // The first reason stays: it is the one the event at once named.
    it->second.latest.address = std::move(refusal.address);
    ++it->second.counted;
    return out;
  }
  if (groups_.size() >= max_groups_) {
    const uint64_t before = rest_.count;
    rest_ = std::move(refusal);
    rest_.client = "*";
    rest_.count = before + 1;
    return out;
  }
  groups_.emplace(key, Group{refusal, 0});
  out.push_back(std::move(refusal));
  return out;
}

std::vector<ClientRefused> RefusalDigest::Flush(TimePoint now, bool force) {
  std::vector<ClientRefused> out;
  if (started_ && (force || now - window_start_ >= window_)) EndWindow(now, out);
  return out;
}

void RefusalDigest::EndWindow(TimePoint now, std::vector<ClientRefused>& out) {
  const double seconds = std::chrono::duration<double>(now - window_start_).count();
  for (auto& [key, group] : groups_) {
    if (group.counted == 0) continue;
    ClientRefused e = std::move(group.latest);
    e.count = group.counted;
    e.seconds = seconds;
    out.push_back(std::move(e));
  }
  if (rest_.count > 0) {
    rest_.seconds = seconds;
    out.push_back(std::move(rest_));
  }
  groups_.clear();
  rest_ = ClientRefused{};
  rest_.count = 0;
  started_ = false;
}

}  // namespace tributary
