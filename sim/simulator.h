// Simulator: many virtual clients in one process, driving the real coordinator and client code.
//
// The coordinator side is the real RoundEngine (selection, deadlines, validation, the Strategy),
// exactly as tributary-coordinator runs it. The client side is the real TaskExecutor — the code
// inside ClientRuntime and tributary-client that turns a TaskAssignment into an UpdateSubmission
// (fit through the Trainer, delta, codec). Every update travels through the wire format: it is
// encoded into frames (EncodeOutbound, the transport's own encoder), the frame bytes are what
// "bytes up" counts, and the coordinator receives what DecodeMessageBody — the hostile-input
// decoder — makes of them. The model download is encoded the same way, once per round attempt.
//
// Time is simulated. A round attempt starts at simulated time t0; each selected client's finish
// time comes from the DeviceModel (download, compute at its speed, upload at its bandwidth), its
// availability and dropout draws. Events are fed to the engine in simulated-time order, so the
// engine's deadline judges stragglers in simulated time, over-selection absorbs dropouts, and a
// failed attempt is retried by the engine. Real wall time is measured too.
//
// Only the clients selected for an attempt are materialized (their examples copied, a Trainer
// built); training runs on a thread pool over every core. Results are deterministic: the same
// config gives bitwise the same models whatever the thread count (per-client seeds come from the
// engine, events are ordered by (simulated time, client), and FedAvg's fixed-point accumulator does
// not depend on order).
//
// Not thread-safe: call Run from one thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/round_engine.h"
#include "core/thread_pool.h"
#include "sim/device_model.h"
#include "sim/population.h"
#include "sim/residual_store.h"
#include "sim/sim_config.h"
#include "sim/sim_data.h"
#include "train/model_spec.h"

namespace tributary {

class NativeTrainer;

// One closed round, as the report shows it.
struct SimRound {
  uint64_t round = 0;
  int64_t attempts = 0;
  int64_t selected = 0;     // in the attempt that closed the round
  int64_t completed = 0;    // updates folded in
  int64_t rejected = 0;     // refused by the engine (late stragglers included)
  int64_t unavailable = 0;  // selected but unreachable (all attempts)
  int64_t dropouts = 0;     // started, then left mid-task (all attempts)
  int64_t stragglers = 0;   // finished after the round had closed or passed its deadline
  uint64_t bytes_up = 0;    // framed bytes of every update sent (all attempts)
  uint64_t bytes_down = 0;  // framed bytes of every model download (all attempts)
  uint64_t cum_bytes_up = 0, cum_bytes_down = 0;
  double sim_seconds = 0.0;  // simulated duration of the round (all attempts)
  double sim_clock = 0.0;    // simulated seconds since the run started, at the round's close
  double wall_seconds = 0.0;
  double wall_clock = 0.0;
  double train_loss = 0.0;  // clients' num_examples-weighted mean
  bool evaluated = false;
  double test_accuracy = 0.0, test_loss = 0.0;
  int64_t malicious = 0;  // malicious clients selected in the attempt that closed the round
};

struct SimResult {
  std::vector<SimRound> rounds;
  double wall_seconds = 0.0;
  double sim_seconds = 0.0;
  uint64_t model_hash = 0;
  ModelWeights final_model;
  // The first round whose test accuracy reached config.target_accuracy (0: never, or no target).
  uint64_t target_round = 0;
  double target_wall_seconds = 0.0, target_sim_seconds = 0.0;
  double join_seconds = 0.0;  // registering the population with the engine

  // Appends a closed round: fills its cumulative byte counts from the previous round and notes
  // the first round whose test accuracy reaches `target_accuracy` (> 0). Returns the stored round.
  const SimRound& Append(SimRound round, double target_accuracy);
};

class Simulator {
 public:
  // Validates the config and builds the population, engine and evaluator. `data` is shared.
  static Result<std::unique_ptr<Simulator>> Create(const SimConfig& config, SimData data);
  ~Simulator();

  // Registers every client with the engine (timed separately; see SimResult::join_seconds).
  Status Join();
  // Runs every round (calls Join first if needed). `on_round` sees each closed round at once.
  Result<SimResult> Run(const std::function<void(const SimRound&)>& on_round = {});

  const Population& population() const { return *population_; }
  const RoundEngine& engine() const { return *engine_; }
  const ModelSpec& spec() const { return spec_; }
  const SimConfig& config() const { return config_; }
  double join_seconds() const { return result_.join_seconds; }
  const ResidualStore& residuals() const { return *residuals_; }

 private:
  struct Job;
  Simulator() = default;
  Status RunAttempt(std::vector<RoundEngine::Outgoing> tasks);
  void RunJob(Job& job, uint64_t bytes_down) const;
  // Attacks (sim/attack.h): counts the attempt's malicious clients and, for ALIE, runs their honest
  // fits on the pool and crafts the delta they all submit.
  Status PrepareAttack(const std::vector<RoundEngine::Outgoing>& tasks);
  bool Malicious(uint64_t client) const;
  // `honest` wrapped in the attack's AttackTrainer when `client` is malicious.
  std::shared_ptr<Trainer> WithAttack(std::shared_ptr<Trainer> honest, uint64_t client,
                                      int64_t num_examples) const;
  void OnRoundComplete(const RoundSummary& s, const ModelWeights& model);
  Result<EvalResult> Evaluate(const ModelWeights& model);
  TimePoint At(double seconds) const;

  SimConfig config_;
  SimData data_;
  ModelSpec spec_;
  ModelWeights layout_;
  std::unique_ptr<Population> population_;
  std::optional<DeviceModel> devices_;
  std::unique_ptr<RoundEngine> engine_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ResidualStore> residuals_;
  std::vector<std::unique_ptr<NativeTrainer>> evaluators_;  // one per test-set slice
  ClientCapabilities caps_;
  bool joined_ = false;

  // Run state.
  double now_ = 0.0;  // simulated seconds
  double wall_start_ = 0.0;
  SimRound pending_;  // counts for the round in progress (across attempts)
  double round_start_sim_ = 0.0, round_start_wall_ = 0.0;
  uint64_t attempt_round_ = 0;
  int64_t attempt_ = 0;
  bool round_closed_ = false;  // set by the engine's hooks during an attempt
  bool attempt_failed_ = false;
  // ALIE, per attempt: the crafted delta and each attacker's honest fit metrics.
  std::shared_ptr<const std::vector<float>> alie_delta_;
  std::map<uint64_t, Metrics> alie_metrics_;
  SimResult result_;
  const std::function<void(const SimRound&)>* on_round_ = nullptr;
};

}  // namespace tributary
