// ClientRegistry: the coordinator's view of connected clients.
//
// A client is keyed by its authenticated id (from its certificate, never from a message field).
// The registry records what the client announced in Hello, when it was last heard from, and whether
// it is busy with a task. Not thread-safe: owned by the RoundEngine, used from one strand.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "protocol/messages.h"

namespace tributary {

struct ClientRecord {
  std::string id;
  ClientCapabilities capabilities;
  TimePoint joined{};
  TimePoint last_seen{};
  bool busy = false;  // assigned a task in the current round attempt (set with MarkBusy)
  uint64_t rounds_completed = 0;
};

class ClientRegistry {
 public:
  // Adds or refreshes a client (a reconnect replaces the old record's capabilities).
  ClientRecord& Join(const std::string& id, const ClientCapabilities& caps, TimePoint now);
  // Removes a client; false when it was not registered.
  bool Leave(const std::string& id);
  ClientRecord* Find(const std::string& id);
  const ClientRecord* Find(const std::string& id) const;
  void Touch(const std::string& id, TimePoint now);

  size_t size() const { return clients_.size(); }
  // Every registered client, in id order.
  const std::map<std::string, ClientRecord>& records() const { return clients_; }
  // Clients that are not busy; O(1), so a driver joining a million clients never scans them.
  size_t num_idle() const { return clients_.size() - num_busy_; }
  // Ids of connected clients that are not busy, in id order (deterministic input to selection).
  std::vector<std::string> Eligible() const;
  // The same ids as pointers to the registry's keys (no string copies; for selection over a large
  // population). Valid until the next Join or Leave.
  std::vector<const std::string*> EligibleIds() const;
  // Marks a registered client busy for the current round attempt.
  void MarkBusy(ClientRecord& record);
  // Marks every client idle (between rounds); O(busy clients), not O(registered).
  void ReleaseAll();

 private:
  std::map<std::string, ClientRecord> clients_;
  std::vector<std::string> busy_ids_;  // may name clients that left since (skipped on release)
  size_t num_busy_ = 0;
};

}  // namespace tributary
