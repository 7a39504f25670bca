// SimConfig: everything tributary-sim reads from its TOML file and command-line flags.
//
// Keys (all optional; unknown keys are errors naming the key):
//   model, dataset ("fashion-mnist" | "synthetic"), data_dir, train_examples, test_examples
//   partition       "iid" | "dirichlet:ALPHA" | "shards:K" (every example to exactly one client) or
//                   "replacement:N" (each client draws N examples with replacement: population
//                   scale, where clients outnumber the examples)
//   clients, per_round, rounds, over_selection, min_completed, round_timeout_s, seed, threads
//   fit.epochs, fit.batch_size, fit.lr, fit.momentum, fit.weight_decay, fit.proximal_mu,
//   fit.max_steps
//   strategy, codec, download_codec ("dense" | "q8": how the model travels to clients),
//   trainer ("native" | "noop": returns the global model untouched, to measure
//   the framework's own overhead), eval_every, target_accuracy, report_dir
//   hetero.*        see HeterogeneityConfig (device_model.h)
//   synthetic.*     height, width, noise (the synthetic data set's shape)
//   residual.*      max_age_rounds, keep_fraction (error-feedback residuals; see below)
//   attack.*        kind, fraction, scale, noise_std, alie_z (malicious clients; sim/attack.h)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "sim/attack.h"
#include "sim/device_model.h"
#include "tributary/trainer.h"

namespace tributary {

struct SimConfig {
  std::string model = "mlp";
  std::string dataset = "fashion-mnist";
  std::string data_dir;        // empty: the Debian package's directory
  int64_t train_examples = 0;  // 0: all
  int64_t test_examples = 0;   // 0: all
  std::string partition = "dirichlet:0.5";
  int64_t clients = 100;
  int64_t per_round = 10;
  int64_t rounds = 20;
  double over_selection = 1.0;
  int64_t min_completed = 0;       // 0: per_round (rounds wait for every update until the deadline)
  double round_timeout_s = 600.0;  // simulated seconds
  uint64_t seed = 1;               // selection, training, partition and heterogeneity draws
  uint64_t init_seed = 1;          // initial weights
  int64_t threads = 0;             // 0: every core
  FitConfig fit;
  std::string strategy = "fedavg";
  std::string codec = "dense";
  std::string download_codec = "dense";  // RoundConfig::download_codec
  std::string trainer = "native";
  int64_t eval_every = 1;
  int64_t eval_batch = 256;
  double target_accuracy = 0.0;  // report the first round (and time) reaching it; 0: none
  std::string report_dir = "sim-report";
  int64_t synthetic_height = 8, synthetic_width = 8;
  double synthetic_noise = 0.4;
  HeterogeneityConfig hetero;
  // Error-feedback residuals (codecs like topk): the simulator keeps one per virtual client that
  // has trained. Each is dropped when the client has not trained for max_age_rounds rounds (0:
  // kept for ever), and only the keep_fraction largest-magnitude entries are kept, sparsely (1:
  // all of it, dense), so a million-client population fits in memory.
  int64_t residual_max_age_rounds = 0;
  double residual_keep_fraction = 1.0;
  AttackConfig attack;  // malicious clients (sim/attack.h); kind "none" by default

  // InvalidArgument naming the key when a value is out of range.
  Status Validate() const;
};

// Reads `cfg` over the defaults already in `out`; errors name the key (unknown keys too).
Status LoadSimConfig(const Config& cfg, SimConfig* out);
// Applies one "key=value" override (tributary-sim's --set): the value is read as TOML, or as a
// string when it is not valid TOML (--set codec=topk(0.01) needs no quotes). Errors name the key.
Status ApplySimOverride(const std::string& key_value, SimConfig* out);
// Every key LoadSimConfig accepts (dotted), in documentation order.
const std::vector<std::string>& SimConfigKeys();

}  // namespace tributary
