// DashboardState: what the live dashboard shows, kept up to date from the run's events, as JSON.
//
// A RunObserver (coordinator/run_events.h). It keeps three things:
//   run      the run's header: model, strategy, codecs, rounds done of the total, the round open
//            now and how far it is, the run's state ("waiting", "training", "finished", "failed"),
//            privacy spent (with differential privacy), clients connected, idle and cooling down
//            (left out of selection after a miss: coordinator/client_registry.h);
//   rounds   one row per closed round: duration, updates accepted, refused and dropped, bytes up
//            and down, the clients' mean training loss, the server's and the federated evaluation;
//   clients  one row per client seen: state ("idle", "training", "left"), last seen (Unix
//            seconds), updates accepted and refused, the last refusal's reason, and
//            "cooling_until": the round it may be selected again from while it cools down (0: not).
//
// Snapshot() is all of it: {"kind": "snapshot", "seq": n, "run": {...}, "rounds": [...],
// "clients": [...]}. After each event the rows it changed are handed to the publisher as a delta:
// {"kind": "delta", "seq": n, "run": {...}, "rounds": [row...], "clients": [row...]} (only the
// keys that changed). Rows are complete, so applying a delta is an upsert by "round" or "id" and
// applying one twice is harmless; a viewer that took a snapshot at seq s ignores deltas with
// seq <= s. That is what the dashboard's page does (web/dashboard.js).
//
// Clients' states come from a sampler (the round engine's registry, read on the run's thread) at
// the events that change them in bulk: RunStarted, RoundOpened, RoundFailed, RoundClosed and
// RunFinished, and whenever RefreshClients is called (the coordinator does every 2 s). Accepted and
// refused updates change their client's row at once. The table keeps at most max_clients rows;
// run.clients_untracked is how many connected clients are beyond them.
//
// Thread-safe: OnEvent on the run's thread; Snapshot from any (the monitor's); the publisher is
// called on the run's thread, outside the lock, in seq order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/run_events.h"

namespace tributary {

class DashboardState final : public RunObserver {
 public:
  struct ClientSample {
    std::string id;
    bool busy = false;       // has a task in the open round attempt
    double last_seen = 0.0;  // Unix seconds
    // Left out of selection until this round (a cool-down after a miss); 0 when it is not.
    uint64_t cooling_until = 0;
  };
  using Sampler = std::function<std::vector<ClientSample>()>;
  using Publisher = std::function<void(std::string json)>;

  explicit DashboardState(size_t max_clients = 10'000) : max_clients_(max_clients) {}

  // Set both before the run starts.
  void set_client_sampler(Sampler sampler) { sampler_ = std::move(sampler); }
  void set_publisher(Publisher publisher) { publisher_ = std::move(publisher); }
  // Unix seconds now; tests pin it.
  void set_wall_clock(std::function<double()> now) { now_ = std::move(now); }

  void OnEvent(const RunEvent& event) override;
  // Samples the clients again between events (on the run's thread, like OnEvent), publishing a
  // delta when a client joined, left, changed state or was heard from.
  void RefreshClients();
  std::string Snapshot() const;
  nlohmann::json SnapshotJson() const;

 private:
  struct ClientRow {
    std::string state = "idle";
    double last_seen = 0.0;
    uint64_t cooling_until = 0;
    uint64_t accepted = 0;
    uint64_t refused = 0;
    std::string last_refusal;
  };
  struct Changes {
    bool run = false;
    std::vector<uint64_t> rounds;
    std::vector<std::string> clients;
  };

  void Apply(const RunEvent& event, Changes& changes);
  // The delta for `changes` (under mu_), or "" when nothing changed or nobody listens.
  std::string Delta(const Changes& changes);
  void SampleClients(Changes& changes);
  ClientRow* Client(const std::string& id, Changes& changes);
  nlohmann::json RunJson() const;
  nlohmann::json ClientJson(const std::string& id, const ClientRow& row) const;
  double Now() const;

  const size_t max_clients_;
  Sampler sampler_;
  Publisher publisher_;
  std::function<double()> now_;

  mutable std::mutex mu_;
  uint64_t seq_ = 0;
  nlohmann::json run_ = nlohmann::json::object();
  std::map<uint64_t, nlohmann::json> rounds_;
  std::map<std::string, ClientRow> clients_;
  uint64_t clients_untracked_ = 0;
};

}  // namespace tributary
