#include "coordinator/run_config.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

#include "train/model_file.h"

namespace tributary {

void BindRunConfig(ConfigSchema& s, RunConfig* r) {
  s.Bind("run.model", &r->model, "a built-in model (mlp, cnn, lenet) or a model file (.toml)")
      .Flag("--model")
      .Path(IsModelFilePath);
  s.Bind("run.init_seed", &r->init_seed, "seeds the model's initial weights").Flag("--init-seed");
  s.Bind("run.initial_model", &r->initial_model,
         "start from these weights (safetensors, any layout; \"\": run.model's initial weights)")
      .Flag("--initial-model")
      .Path();
  s.Bind("run.strategy", &r->strategy,
         "the aggregation rule, e.g. fedavg, fedadam(server_lr=0.01), clip(norm=5)+krum(f=2)")
      .Flag("--strategy");
  s.Bind("run.server_lr", &r->server_lr, "server learning rate of fedavg, fedprox and fedavgm");
  BindRoundConfig(s, &r->round);
  s.Bind("eval.every", &r->eval_every, "server-side evaluation every k rounds (0: never)")
      .Flag("--eval-every");
  s.Bind("eval.batch_size", &r->eval_batch_size, "server-side evaluation batch size");
  s.Bind("output.checkpoint_dir", &r->checkpoint_dir,
         "where the checkpoint is written after every round")
      .Flag("--checkpoint-dir")
      .Path();
  s.Bind("output.checkpoint_every", &r->checkpoint_every,
         "a checkpoint after every k-th round (asynchronous: step) and after the last");
  s.Bind("output.keep_checkpoints", &r->keep_checkpoints,
         "checkpoints kept (the newest k rounds'); --resume falls back to an older good one");
  s.Bind("output.event_log", &r->event_log, "the JSON-lines event log").Path();
  s.Bind("output.final_model", &r->final_model, "the final model (safetensors)").Path();
  s.Bind("output.history", &r->history,
         "the run history database (SQLite; \"\": $XDG_STATE_HOME/tributary/history.db, "
         "\"none\": off)")
      .Path([](std::string_view v) { return v != "none"; });
}

Status RunConfig::Validate() const {
  if (model.empty() && initial_model.empty())
    return Status::InvalidArgument(
        "keys 'run.model' and 'run.initial_model' are both empty: name a model, or a safetensors "
        "file of starting weights");
  if (!(server_lr > 0.0) || !std::isfinite(server_lr))
    return Status::InvalidArgument(fmt::format("key 'run.server_lr' = {} must be > 0", server_lr));
  TRIB_RETURN_IF_ERROR(round.Validate());
  // SCAFFOLD's control variates and FedNova's normalization are derived for local SGD.
  if (round.fit.optimizer != "sgd" &&
      (strategy.starts_with("scaffold") || strategy.starts_with("fednova")))
    return Status::InvalidArgument(fmt::format(
        "key 'run.strategy' = '{}' assumes local SGD; fit.optimizer = '{}' is refused with it "
        "(use fit.optimizer = 'sgd', or another strategy)",
        strategy, round.fit.optimizer));
  if (eval_every < 0)
    return Status::InvalidArgument(
        fmt::format("key 'eval.every' = {} must be >= 0 (0: never)", eval_every));
  if (keep_checkpoints < 1 || keep_checkpoints > 1000)
    return Status::InvalidArgument(
        fmt::format("key 'output.keep_checkpoints' = {} must be in [1, 1000]", keep_checkpoints));
  if (checkpoint_every < 1)
    return Status::InvalidArgument(
        fmt::format("key 'output.checkpoint_every' = {} must be >= 1", checkpoint_every));
  if (round.dp.enabled && checkpoint_every != 1)
    return Status::InvalidArgument(fmt::format(
        "key 'output.checkpoint_every' = {} must be 1 with differential privacy (dp.enabled): "
        "the accountant is saved with each checkpoint, and a run resumed from an older one would "
        "release the rounds after it again without counting their first release",
        checkpoint_every));
  if (eval_batch_size < 1)
    return Status::InvalidArgument(
        fmt::format("key 'eval.batch_size' = {} must be >= 1", eval_batch_size));
  return Status::Ok();
}

}  // namespace tributary
