// SimConfig: everything tributary-sim reads from its TOML file and command line, as one
// ConfigSchema (BindSimConfig). `tributary-sim --print-config` lists every key with its default.
//
// The run and the data use the keys every program uses for them (run.*, fit.*, eval.*: the
// coordinator's, coordinator/run_config.h; data.*: the client's, train/data/data_config.h), with
// the simulator's own defaults (20 rounds, a 600 s simulated deadline, 100 clients, Dirichlet(0.5),
// min_completed 0 = every selected update, 50 attempts per round). Keys that have no meaning in a
// simulation are refused with the reason: run.min_available (every virtual client is available
// between rounds), eval.federated_every and output.* (the simulator writes to sim.report_dir).
// The simulator's own keys:
//   sim.threads         worker threads (0: every core)
//   sim.trainer         "native" or "noop" (sim/trainer_factory.h)
//   sim.target_accuracy report the first round (and time) reaching it; 0: none
//   sim.stop_at_target  end the run there (benchmarks of time to accuracy)
//   sim.report_dir      report.html, report.json, rounds.csv, events.jsonl, final.safetensors
//   log_level
//   hetero.*            device and network heterogeneity (sim/device_model.h)
//   tier.*              aggregators, link_mbps, latency_ms: the aggregation tier (sim/sim_tier.h)
//   residual.*          max_age_rounds, keep_fraction (error-feedback residuals, below)
//   attack.*            kind, fraction, scale, noise_std, alie_z (malicious clients; sim/attack.h)
// Old flat keys (rounds, per_round, clients, ...) are errors that name their new key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/run_config.h"
#include "core/config_schema.h"
#include "sim/attack.h"
#include "sim/device_model.h"
#include "sim/sim_tier.h"
#include "train/data/data_config.h"

namespace tributary {

struct SimConfig {
  SimConfig();

  RunConfig run;
  DataConfig data;
  std::string log_level = "info";  // info: long operations report their progress (core/progress.h)
  int64_t threads = 0;
  std::string trainer = "native";
  double target_accuracy = 0.0;
  bool stop_at_target = false;  // end the run once target_accuracy is reached
  std::string report_dir = "sim-report";
  HeterogeneityConfig hetero;
  TierModelConfig tier;  // the aggregation tier between the clients and the coordinator
  // Error-feedback residuals (codecs like topk): the simulator keeps one per virtual client that
  // has trained. Each is dropped when the client has not trained for max_age_rounds rounds (0:
  // kept for ever), and only the keep_fraction largest-magnitude entries are kept, sparsely (1:
  // all of it, dense), so a million-client population fits in memory.
  int64_t residual_max_age_rounds = 0;
  double residual_keep_fraction = 1.0;
  AttackConfig attack;  // malicious clients (sim/attack.h); kind "none" by default
  // Continue from the newest good checkpoint in run.checkpoint_dir (output.checkpoint_dir) and
  // its simulator state (sim/sim_checkpoint.h). Not a key: tributary-sim's --resume.
  bool resume = false;

  // The run as the engine runs it, in-process and in deployment alike: every client must be back
  // (rejoined after a dropout) before a round starts, so run.min_available is the population. Of
  // the outputs only the checkpoints are kept (output.checkpoint_dir); the caller decides where
  // the rest go.
  RunConfig EffectiveRun() const;
  // InvalidArgument naming the key when a value is out of range or settings conflict.
  Status Validate() const;
};

void BindSimConfig(ConfigSchema& schema, SimConfig* config);

// The keys whose value differs from the default (for deployment mode's checks).
std::vector<std::string> ChangedSimKeys(const SimConfig& config);

}  // namespace tributary
