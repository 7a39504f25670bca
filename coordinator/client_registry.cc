#include "coordinator/client_registry.h"

namespace tributary {

ClientRecord& ClientRegistry::Join(const std::string& id, const ClientCapabilities& caps,
                                   TimePoint now) {
  ClientRecord& r = clients_[id];
  if (r.id.empty()) {
    r.id = id;
    r.joined = now;
  }
  r.capabilities = caps;
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

void ClientRegistry::MarkBusy(ClientRecord& record) {
  if (record.busy) return;
  record.busy = true;
  ++num_busy_;
  busy_ids_.push_back(record.id);
}

void ClientRegistry::ReleaseAll() {
  for (const std::string& id : busy_ids_)
    if (ClientRecord* r = Find(id)) r->busy = false;
  busy_ids_.clear();
  num_busy_ = 0;
}

}  // namespace tributary
