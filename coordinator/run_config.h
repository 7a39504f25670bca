// RunConfig: everything a federated run is made of, whoever drives it (tributary-coordinator in
// deployment, tributary-sim in simulation): the model, the strategy, the rounds, the evaluation and
// where the outputs go. RunDriver (run_driver.h) is built from one.
//
// Keys (BindRunConfig), the same in every program that runs rounds:
//   run.model, run.init_seed, run.initial_model, run.strategy, run.server_lr, the RoundConfig keys
//   (run.rounds ... fit.*; round_config.h), eval.every, eval.batch_size, output.checkpoint_dir,
//   output.checkpoint_every, output.keep_checkpoints, output.event_log, output.final_model,
//   output.history
#pragma once

#include <string>

#include "coordinator/round_config.h"
#include "core/config_schema.h"

namespace tributary {

struct RunConfig {
  std::string model = "mlp";  // a built-in model (train/model_spec.h) or a model file; "": none
  uint64_t init_seed = 1;     // seeds its initial weights
  // The starting weights, from a safetensors file of any layout ("": run.model's initial weights).
  // With run.model set too, the file must have that model's layout.
  std::string initial_model;
  std::string strategy = "fedavg";
  double server_lr = 1.0;  // fedavg/fedprox/fedavgm's server_lr when the spec sets none
  RoundConfig round;
  int64_t eval_every = 1;  // server-side evaluation every k rounds (0: never)
  int64_t eval_batch_size = 256;
  std::string checkpoint_dir;    // "" : no checkpoints
  int64_t keep_checkpoints = 3;  // the newest k checkpoints are kept (resume falls back on them)
  int64_t checkpoint_every = 1;  // a checkpoint after every k-th round (or step), and the last
  std::string event_log;         // "" : no event log
  std::string final_model;       // "" : the final model is not saved
  // The run history database (history/history_path.h): "" its default place, "none" no history.
  std::string history;

  // InvalidArgument naming the key when a value is out of range or inconsistent.
  Status Validate() const;
};

void BindRunConfig(ConfigSchema& schema, RunConfig* run);

}  // namespace tributary
