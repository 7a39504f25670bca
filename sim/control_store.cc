#include "sim/control_store.h"

#include <cmath>

#include <fmt/format.h>

namespace tributary {

std::vector<float> ControlStore::Get(uint64_t client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(client);
  return it == entries_.end() ? std::vector<float>() : it->second;
}

void ControlStore::Put(uint64_t client, std::vector<float> control) {
  if (control.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  entries_[client] = std::move(control);
}

size_t ControlStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::map<uint64_t, std::vector<float>> ControlStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

Status ControlStore::Restore(std::map<uint64_t, std::vector<float>> entries, uint64_t model_size) {
  for (const auto& [client, c] : entries) {
    if (c.size() != model_size)
      return Status::InvalidArgument(fmt::format(
          "client {}'s SCAFFOLD control variate has {} values; the model has {} parameters", client,
          c.size(), model_size));
    for (float v : c)
      if (!std::isfinite(v))
        return Status::InvalidArgument(fmt::format(
            "client {}'s SCAFFOLD control variate holds a value that is not finite", client));
  }
  std::lock_guard<std::mutex> lock(mu_);
  entries_ = std::move(entries);
  return Status::Ok();
}

}  // namespace tributary
