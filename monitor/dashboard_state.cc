#include "monitor/dashboard_state.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>

#include "core/wall_clock.h"

namespace tributary {
namespace {

constexpr double kLastSeenResolution = 5.0;  // seconds

// JSON has no NaN or infinity: those become null.
nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

double DashboardState::Now() const { return now_ ? now_() : UnixSeconds(); }

DashboardState::ClientRow* DashboardState::Client(const std::string& id, Changes& changes) {
  auto it = clients_.find(id);
  if (it == clients_.end()) {
    if (clients_.size() >= max_clients_) return nullptr;  // counted at the next sample
    it = clients_.emplace(id, ClientRow{}).first;
  }
  changes.clients.push_back(id);
  return &it->second;
}

void DashboardState::SampleClients(Changes& changes) {
  if (!sampler_) return;
  const std::vector<ClientSample> samples = sampler_();
  std::set<std::string> present;
  int64_t idle = 0, cooling = 0;
  uint64_t untracked = 0;
  for (const ClientSample& s : samples) {
    present.insert(s.id);
    if (!s.busy) ++idle;
    if (s.cooling_until != 0) ++cooling;
    auto it = clients_.find(s.id);
    if (it == clients_.end() && clients_.size() >= max_clients_) {
      ++untracked;
      continue;
    }
    const std::string state = s.busy ? "training" : "idle";
    // Heartbeats move last_seen all the time: a row is sent again when its state changed or it
    // was last sent more than a few seconds ago, not at every event.
    if (it != clients_.end() && it->second.state == state &&
        it->second.cooling_until == s.cooling_until &&
        std::abs(it->second.last_seen - s.last_seen) < kLastSeenResolution)
      continue;
    if (ClientRow* row = Client(s.id, changes)) {
      row->state = state;
      row->last_seen = s.last_seen;
      row->cooling_until = s.cooling_until;
    }
  }
  for (auto& [id, row] : clients_) {
    if (row.state == "left" || present.count(id) != 0) continue;
    row.state = "left";
    changes.clients.push_back(id);
  }
  if (untracked != clients_untracked_) {
    clients_untracked_ = untracked;
    changes.run = true;
  }
  const auto connected = static_cast<int64_t>(samples.size());
  if (run_.value("clients_connected", int64_t{-1}) != connected ||
      run_.value("clients_idle", int64_t{-1}) != idle ||
      run_.value("clients_cooling", int64_t{-1}) != cooling) {
    run_["clients_connected"] = connected;
    run_["clients_idle"] = idle;
    run_["clients_cooling"] = cooling;
    changes.run = true;
  }
}

void DashboardState::Apply(const RunEvent& event, Changes& changes) {
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, RunStarted>) {
          run_["model"] = e.model.empty() ? e.initial_model : e.model;
          run_["strategy"] = e.strategy;
          run_["codec"] = e.codec;
          run_["download_codec"] = e.download_codec;
          run_["rounds_total"] = e.rounds;
          run_["mode"] = e.mode;  // "async": the rounds are steps
          run_["clients_per_round"] = e.clients_per_round;
          run_["parameters"] = e.parameters;
          run_["rounds_done"] = e.rounds_done;
          run_["round"] = e.rounds_done;
          run_["round_open"] = false;
          run_["state"] = "waiting";
          run_["resumed_from"] = e.resumed_from;
          run_["started_at"] = Now();
          changes.run = true;
          SampleClients(changes);
        } else if constexpr (std::is_same_v<E, RoundOpened>) {
          run_["round"] = e.round;
          run_["attempt"] = e.attempt;
          run_["selected"] = e.selected;
          run_["received"] = 0;
          run_["round_open"] = true;
          run_["round_opened_at"] = Now();
          run_["state"] = "training";
          changes.run = true;
          SampleClients(changes);
        } else if constexpr (std::is_same_v<E, UpdateAccepted>) {
          run_["received"] = run_.value("received", int64_t{0}) + 1;
          changes.run = true;
          if (ClientRow* row = Client(e.client, changes)) {
            ++row->accepted;
            row->last_seen = Now();
            row->state = "idle";
          }
        } else if constexpr (std::is_same_v<E, UpdateRefused>) {
          if (ClientRow* row = Client(e.client, changes)) {
            ++row->refused;
            row->last_seen = Now();
            row->last_refusal = e.code.empty() ? e.reason : e.code + ": " + e.reason;
          }
        } else if constexpr (std::is_same_v<E, RoundFailed>) {
          run_["round_open"] = false;
          run_["last_failure"] = e.reason;
          run_["state"] = "waiting";
          changes.run = true;
          SampleClients(changes);
        } else if constexpr (std::is_same_v<E, CheckpointWritten>) {
          run_["last_checkpoint"] = e.error.empty() ? e.path : "";
          changes.run = true;
        } else if constexpr (std::is_same_v<E, Evaluated>) {
          // RoundClosed carries the evaluation too; it is recorded there, with the round's row.
        } else if constexpr (std::is_same_v<E, RoundClosed>) {
          const RoundSummary& s = e.summary;
          nlohmann::json& row = rounds_[s.round];
          row["round"] = s.round;
          row["attempts"] = s.attempts;
          row["selected"] = s.selected;
          row["accepted"] = s.accepted;
          row["refused"] = s.refused;
          row["dropped"] = s.dropped;
          row["bytes_up"] = s.bytes_up;
          row["bytes_down"] = s.bytes_down;
          row["duration_seconds"] = Number(s.duration_s);
          row["closed_at"] = Now();
          // The clients' mean training loss, under the name the built-in trainers report it by.
          if (const auto loss = s.client_metrics.find("train_loss"); loss != s.client_metrics.end())
            row["train_loss"] = Number(loss->second);
          if (e.evaluation) {
            row["loss"] = Number(e.evaluation->loss);
            row["accuracy"] = Number(e.evaluation->accuracy);
          }
          if (s.split) {
            // Split learning: per batch each way, and the server part's compute.
            const double batches = static_cast<double>(std::max<uint64_t>(1, s.split->batches));
            row["split_batches"] = s.split->batches;
            row["split_bytes_per_batch"] =
                Number(static_cast<double>(s.split->bytes_in + s.split->bytes_out) / batches);
            row["split_server_seconds"] = Number(s.split->server_seconds);
          }
          if (s.dp) {
            row["epsilon"] = Number(s.dp->epsilon);
            run_["epsilon"] = Number(s.dp->epsilon);
          }
          changes.rounds.push_back(s.round);
          run_["rounds_done"] = s.round;
          run_["round_open"] = false;
          run_["state"] = "waiting";
          changes.run = true;
          SampleClients(changes);
        } else if constexpr (std::is_same_v<E, FederatedEvaluated>) {
          nlohmann::json& row = rounds_[e.summary.round];
          row["round"] = e.summary.round;
          row["federated_loss"] = Number(e.summary.loss);
          row["federated_accuracy"] = Number(e.summary.accuracy);
          changes.rounds.push_back(e.summary.round);
        } else if constexpr (std::is_same_v<E, RunFinished>) {
          run_["round_open"] = false;
          run_["rounds_done"] = e.rounds_done;
          run_["state"] = e.ok ? "finished" : "failed";
          run_["status"] = e.status;
          if (!e.stopped.empty()) run_["stopped"] = e.stopped;
          run_["final_model"] = e.final_model;
          changes.run = true;
          SampleClients(changes);
        }
      },
      event);
}

std::string DashboardState::Delta(const Changes& changes) {
  if (!changes.run && changes.rounds.empty() && changes.clients.empty()) return "";
  run_["last_event_at"] = Now();
  const uint64_t seq = ++seq_;
  if (!publisher_) return "";
  nlohmann::json out = {{"kind", "delta"}, {"seq", seq}};
  if (changes.run) out["run"] = RunJson();
  if (!changes.rounds.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (uint64_t r : std::set<uint64_t>(changes.rounds.begin(), changes.rounds.end()))
      rows.push_back(rounds_.at(r));
    out["rounds"] = std::move(rows);
  }
  if (!changes.clients.empty()) {
    nlohmann::json rows = nlohmann::json::array();
    for (const std::string& id :
         std::set<std::string>(changes.clients.begin(), changes.clients.end()))
      rows.push_back(ClientJson(id, clients_.at(id)));
    out["clients"] = std::move(rows);
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void DashboardState::OnEvent(const RunEvent& event) {
  std::string delta;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Changes changes;
    Apply(event, changes);
    delta = Delta(changes);
  }
  if (!delta.empty()) publisher_(std::move(delta));
}

void DashboardState::RefreshClients() {
  std::string delta;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Changes changes;
    SampleClients(changes);
    delta = Delta(changes);
  }
  if (!delta.empty()) publisher_(std::move(delta));
}

nlohmann::json DashboardState::RunJson() const {
  nlohmann::json run = run_;
  run["clients_untracked"] = clients_untracked_;
  return run;
}

nlohmann::json DashboardState::ClientJson(const std::string& id, const ClientRow& row) const {
  return {{"id", id},
          {"state", row.state},
          {"last_seen", row.last_seen},
          {"cooling_until", row.cooling_until},
          {"accepted", row.accepted},
          {"refused", row.refused},
          {"last_refusal", row.last_refusal}};
}

nlohmann::json DashboardState::SnapshotJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& [r, row] : rounds_) rounds.push_back(row);
  nlohmann::json clients = nlohmann::json::array();
  for (const auto& [id, row] : clients_) clients.push_back(ClientJson(id, row));
  return {{"kind", "snapshot"},
          {"seq", seq_},
          {"run", RunJson()},
          {"rounds", std::move(rounds)},
          {"clients", std::move(clients)}};
}

std::string DashboardState::Snapshot() const {
  // Client ids and refusal reasons come from outside: bytes that are not UTF-8 are replaced.
  return SnapshotJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tributary
