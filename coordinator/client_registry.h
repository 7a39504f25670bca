// ClientRegistry: the coordinator's view of connected clients.
//
// A client is keyed by its authenticated id (from its certificate, never from a message field).
// The registry records what the client announced in Hello, when it was last heard from, and whether
// it is busy with a task. Not thread-safe: owned by the RoundEngine, used from one strand.
//
// It also remembers who let a round down: a client selected for a round that sent no update by the
// deadline (silent, or too late), or whose update was refused, is "cooling down": left out of
// selection (EligibleIds(round)) for a number of rounds that doubles with each consecutive miss
// (1, 2, 4, ... up to a cap); once that is over it is "on probation" until its next accepted update
// (RecordGood) forgets the misses. The cool-down is
// kept by id, through a disconnect and a reconnect (Leave does not forget it), so a client cannot
// shed it by reconnecting; the table holds only clients with a miss since their last good update.
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
  std::string via;  // the aggregator it joined through (docs/tier.md); empty: directly
  // run.federate = "unfrozen": the frozen tensors went out to it since it joined (StampFrozen).
  bool holds_frozen = false;
};

// A client's cool-down (ClientRegistry::RecordMiss).
struct Cooldown {
  uint64_t misses = 0;       // consecutive misses since the last accepted update
  uint64_t last_miss = 0;    // the round of the latest (one miss per round at most)
  uint64_t until_round = 0;  // left out of selection for the rounds before this one
  uint64_t refused_in = 0;   // the latest round whose update from it was refused (0: none)
};

class ClientRegistry {
 public:
  // Adds or refreshes a client (a reconnect replaces the old record's capabilities and `via`).
  ClientRecord& Join(const std::string& id, const ClientCapabilities& caps, TimePoint now,
                     const std::string& via = {});
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
  // The idle clients for selection in `round`, in three pools: `clean` (no miss on record), in id
  // order; `probation` (a miss on record whose cool-down is over: until_round <= round), in id
  // order; `cooling` (until_round > round), the earliest to come back first, then by id.
  struct Pools {
    std::vector<const std::string*> clean, probation, cooling;
  };
  Pools SelectionPools(uint64_t round) const;
  // A miss in `round` (the client was selected and sent no update by the deadline, or its update
  // was refused): with m consecutive misses, the client is left out of selection until round
  // round + 1 + min(2^(m-1), cap), so from the rest of this round's attempts and the next
  // min(2^(m-1), cap) rounds. A second miss in the same round changes nothing. cap = 0: nothing is
  // recorded (the cool-down is off). `refused`: the miss was a refused update
  // (Cooldown::refused_in).
  void RecordMiss(const std::string& id, uint64_t round, uint64_t cap, bool refused);
  // An accepted update: the client's cool-down and its count of misses are forgotten.
  void RecordGood(const std::string& id) { cooldowns_.erase(id); }
  // The round from which the client may be selected again; 0 when it has no miss on record.
  uint64_t CoolingUntil(const std::string& id) const;
  // Clients (connected or not) still cooling down in `round`.
  size_t NumCooling(uint64_t round) const;
  // The round selection is for now (the round engine sets it as rounds close), for readers that
  // do not know it: the dashboard and the metrics.
  void SetRound(uint64_t round) { round_ = round; }
  uint64_t round() const { return round_; }
  size_t num_cooling() const { return NumCooling(round_); }
  // The round `id` may be selected again from, when it is cooling down now; else 0.
  uint64_t CoolingNow(const std::string& id) const {
    const uint64_t until = CoolingUntil(id);
    return until > round_ ? until : 0;
  }
  // Every client with a miss since its last accepted update, in id order.
  const std::map<std::string, Cooldown, std::less<>>& cooldowns() const { return cooldowns_; }
  // Replaces the table of cool-downs (what cooldowns() returned, saved and read back: the
  // simulator's checkpoint; a deployed coordinator's clients start with clean records).
  void RestoreCooldowns(std::map<std::string, Cooldown, std::less<>> cooldowns) {
    cooldowns_ = std::move(cooldowns);
  }
  // Marks a registered client busy for the current round attempt.
  void MarkBusy(ClientRecord& record);
  // Marks every client idle (between rounds); O(busy clients), not O(registered).
  void ReleaseAll();
  // Marks one client idle (its asynchronous task is over).
  void Release(ClientRecord& record);

 private:
  std::map<std::string, ClientRecord> clients_;
  std::vector<std::string> busy_ids_;  // may name clients that left since (skipped on release)
  size_t num_busy_ = 0;
  std::map<std::string, Cooldown, std::less<>> cooldowns_;
  uint64_t round_ = 1;
};

}  // namespace tributary
