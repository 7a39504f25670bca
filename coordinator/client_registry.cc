#include "coordinator/client_registry.h"

#include <algorithm>

namespace tributary {

ClientRecord& ClientRegistry::Join(const std::string& id, const ClientCapabilities& caps,
                                   TimePoint now, const std::string& via) {
  ClientRecord& r = clients_[id];
  if (r.id.empty()) {
    r.id = id;
    r.joined = now;
  }
  r.capabilities = caps;
  r.via = via;
  r.holds_frozen = false;  // a new connection: whatever it held is not known to be there
  r.last_seen = now;
  if (r.busy) --num_busy_;
  r.busy = false;
  return r;
}

bool ClientRegistry::Leave(const std::string& id) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return false;
  if (it->second.busy) --num_busy_;
  clients_.erase(it);
  return true;
}

ClientRecord* ClientRegistry::Find(const std::string& id) {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : &it->second;
}

const ClientRecord* ClientRegistry::Find(const std::string& id) const {
  auto it = clients_.find(id);
  return it == clients_.end() ? nullptr : &it->second;
}

void ClientRegistry::Touch(const std::string& id, TimePoint now) {
  if (ClientRecord* r = Find(id)) r->last_seen = now;
}

std::vector<std::string> ClientRegistry::Eligible() const {
  std::vector<std::string> out;
  for (const auto& [id, r] : clients_)
    if (!r.busy) out.push_back(id);
  return out;
}

std::vector<const std::string*> ClientRegistry::EligibleIds() const {
  std::vector<const std::string*> out;
  out.reserve(num_idle());
  for (const auto& [id, r] : clients_)
    if (!r.busy) out.push_back(&id);
  return out;
}

ClientRegistry::Pools ClientRegistry::SelectionPools(uint64_t round) const {
  Pools p;
  if (cooldowns_.empty()) {
    p.clean = EligibleIds();
    return p;
  }
  p.clean.reserve(num_idle());
  std::vector<std::pair<uint64_t, const std::string*>> waiting;
  for (const auto& [id, r] : clients_) {
    if (r.busy) continue;
    auto c = cooldowns_.find(id);
    if (c == cooldowns_.end()) {
      p.clean.push_back(&id);
    } else if (c->second.until_round <= round) {
      p.probation.push_back(&id);
    } else {
      waiting.emplace_back(c->second.until_round, &id);
    }
  }
  std::stable_sort(waiting.begin(), waiting.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& w : waiting) p.cooling.push_back(w.second);
  return p;
}

void ClientRegistry::RecordMiss(const std::string& id, uint64_t round, uint64_t cap, bool refused) {
  if (cap == 0) return;
  Cooldown& c = cooldowns_[id];
  if (refused) c.refused_in = round;
  if (c.misses > 0 && c.last_miss == round) return;
  ++c.misses;
  c.last_miss = round;
  const uint64_t rounds =
      c.misses > 63 ? cap : std::min<uint64_t>(uint64_t{1} << (c.misses - 1), cap);
  c.until_round = round + 1 + rounds;
}

uint64_t ClientRegistry::CoolingUntil(const std::string& id) const {
  auto c = cooldowns_.find(id);
  return c == cooldowns_.end() ? 0 : c->second.until_round;
}

size_t ClientRegistry::NumCooling(uint64_t round) const {
  return static_cast<size_t>(
      std::count_if(cooldowns_.begin(), cooldowns_.end(),
                    [&](const auto& c) { return c.second.until_round > round; }));
}

void ClientRegistry::MarkBusy(ClientRecord& record) {
  if (record.busy) return;
  record.busy = true;
  ++num_busy_;
  // Released one by one (Release), ids of idle clients pile up here: drop them now and then, so
  // the list stays O(busy clients) in an asynchronous run that never calls ReleaseAll.
  if (busy_ids_.size() > 2 * num_busy_ + 64) {
    std::erase_if(busy_ids_, [this](const std::string& id) {
      const ClientRecord* r = Find(id);
      return r == nullptr || !r->busy;
    });
    std::sort(busy_ids_.begin(), busy_ids_.end());  // a client busy again is listed once
    busy_ids_.erase(std::unique(busy_ids_.begin(), busy_ids_.end()), busy_ids_.end());
  }
  busy_ids_.push_back(record.id);
}

void ClientRegistry::Release(ClientRecord& record) {
  if (!record.busy) return;
  record.busy = false;
  --num_busy_;
}

void ClientRegistry::ReleaseAll() {
  for (const std::string& id : busy_ids_)
    if (ClientRecord* r = Find(id)) r->busy = false;
  busy_ids_.clear();
  num_busy_ = 0;
}

}  // namespace tributary
