#include "sim/residual_store.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tributary {
namespace {

uint64_t EntryBytes(size_t index, size_t values) {
  return index * sizeof(uint32_t) + values * sizeof(float);
}

}  // namespace

std::optional<CodecState> ResidualStore::Get(uint64_t client, uint64_t round) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(client);
  if (it == entries_.end() || Expired(it->second, round)) return std::nullopt;
  const Entry& e = it->second;
  CodecState s;
  s.spec = e.spec;
  if (e.index.empty()) {
    s.residual = e.values;
  } else {
    s.residual.assign(e.size, 0.0f);
    for (size_t i = 0; i < e.index.size(); ++i) s.residual[e.index[i]] = e.values[i];
  }
  return s;
}

void ResidualStore::Put(uint64_t client, uint64_t round, CodecState state) {
  Entry e;
  e.spec = std::move(state.spec);
  e.round = round;
  e.size = state.residual.size();
  if (keep_fraction_ < 1.0 && !state.residual.empty()) {
    const size_t n = state.residual.size();
    const size_t k = std::max<size_t>(
        1, static_cast<size_t>(std::ceil(keep_fraction_ * static_cast<double>(n))));
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
    std::nth_element(order.begin(), order.begin() + static_cast<ptrdiff_t>(k - 1), order.end(),
                     [&](uint32_t a, uint32_t b) {
                       const float x = std::abs(state.residual[a]), y = std::abs(state.residual[b]);
                       return x != y ? x > y : a < b;
                     });
    order.resize(k);
    std::sort(order.begin(), order.end());
    e.index = std::move(order);
    e.values.reserve(k);
    for (uint32_t i : e.index) e.values.push_back(state.residual[i]);
  } else {
    e.values = std::move(state.residual);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(client);
  if (it != entries_.end()) {
    bytes_ -= EntryBytes(it->second.index.size(), it->second.values.size());
    entries_.erase(it);
  }
  if (e.values.empty()) return;
  bytes_ += EntryBytes(e.index.size(), e.values.size());
  entries_.emplace(client, std::move(e));
}

void ResidualStore::Expire(uint64_t round) {
  if (max_age_ <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (Expired(it->second, round)) {
      bytes_ -= EntryBytes(it->second.index.size(), it->second.values.size());
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t ResidualStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

uint64_t ResidualStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::map<uint64_t, ResidualStore::Entry> ResidualStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

Status ResidualStore::Restore(std::map<uint64_t, Entry> entries, uint64_t model_size) {
  uint64_t bytes = 0;
  for (const auto& [client, e] : entries) {
    auto bad = [client = client](const std::string& why) {
      return Status::InvalidArgument(
          fmt::format("the error-feedback residual of client {} {}", client, why));
    };
    if (e.values.empty()) return bad("is empty");
    if (e.size != model_size)
      return bad(
          fmt::format("has a length of {}, not the model's {} parameters", e.size, model_size));
    if (e.index.empty() ? e.values.size() != e.size : e.index.size() != e.values.size())
      return bad(fmt::format("has {} values for {} indices of a length {}", e.values.size(),
                             e.index.size(), e.size));
    for (size_t i = 0; i < e.index.size(); ++i)
      if (e.index[i] >= e.size || (i > 0 && e.index[i] <= e.index[i - 1]))
        return bad(
            fmt::format("has index {} at {}: not ascending within [0, {})", e.index[i], i, e.size));
    for (float v : e.values)
      if (!std::isfinite(v)) return bad("holds a value that is not finite");
    bytes += EntryBytes(e.index.size(), e.values.size());
  }
  std::lock_guard<std::mutex> lock(mu_);
  entries_ = std::move(entries);
  bytes_ = bytes;
  return Status::Ok();
}

}  // namespace tributary
