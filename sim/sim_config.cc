#include "sim/sim_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace tributary {

SimConfig::SimConfig() {
  run.round.rounds = 20;
  run.round.round_timeout = std::chrono::seconds(600);  // simulated seconds
  run.round.min_completed = 0;                          // every selected update
  run.round.max_round_attempts = 50;
  data.partition = "dirichlet:0.5";
  data.num_clients = 100;
}

void BindSimConfig(ConfigSchema& s, SimConfig* c) {
  BindRunConfig(s, &c->run);
  BindDataConfig(s, &c->data, /*partitioned=*/true);
  s.Bind("log_level", &c->log_level, "trace, debug, info, warn or error").Flag("--log-level");
  s.Bind("sim.threads", &c->threads, "worker threads (0: every core)").Flag("--threads");
  s.Bind("sim.trainer", &c->trainer,
         "\"native\" trains; \"noop\" returns the model untouched (the framework's own cost)")
      .Flag("--trainer");
  s.Bind("sim.target_accuracy", &c->target_accuracy,
         "report the first round reaching this test accuracy, a fraction (0: none)");
  s.Bind("sim.stop_at_target", &c->stop_at_target,
         "end the run at the first round reaching sim.target_accuracy (no final model is saved)");
  s.Bind("sim.report_dir", &c->report_dir,
         "where report.html, report.json, rounds.csv, events.jsonl and the final model go")
      .Flag("--report-dir")
      .Path();
  HeterogeneityConfig& h = c->hetero;
  s.Bind("hetero.speed_tiers", &h.speed_tiers,
         "compute tiers \"name:fraction:samples_per_s,...\" (\"\": one at hetero.samples_per_s)")
      .Flag("--speed-tiers");
  s.Bind("hetero.samples_per_s", &h.samples_per_s, "training speed of a device, samples/s");
  s.Bind("hetero.speed_sigma", &h.speed_sigma, "log-normal spread of a client's speed");
  s.Bind("hetero.availability", &h.availability, "chance a selected client is reachable")
      .Flag("--availability");
  s.Bind("hetero.dropout", &h.dropout, "chance a client leaves in the middle of its task")
      .Flag("--dropout");
  s.Bind("hetero.down_mbps", &h.down_mbps, "download bandwidth, Mbit/s (0: unlimited)");
  s.Bind("hetero.up_mbps", &h.up_mbps, "upload bandwidth, Mbit/s (0: unlimited)");
  s.Bind("hetero.bandwidth_sigma", &h.bandwidth_sigma, "log-normal spread of the bandwidths");
  s.Bind("hetero.latency_ms", &h.latency_ms, "network latency per transfer, ms");
  s.Bind("tier.aggregators", &c->tier.aggregators,
         "simulated aggregators between the clients and the coordinator (0: none)")
      .Flag("--aggregators");
  s.Bind("tier.link_mbps", &c->tier.link_mbps,
         "bandwidth of each aggregator's link to the coordinator, Mbit/s (0: unlimited)");
  s.Bind("tier.latency_ms", &c->tier.latency_ms,
         "latency per transfer on an aggregator's link to the coordinator, ms");
  s.Bind("residual.max_age_rounds", &c->residual_max_age_rounds,
         "drop a residual its client has not used for this many rounds (0: never)");
  s.Bind("residual.keep_fraction", &c->residual_keep_fraction,
         "keep only this fraction of a residual's largest entries, in (0, 1]");
  s.Bind("attack.kind", &c->attack.kind,
         "what malicious clients do: none, sign_flip, gaussian, scale, label_flip, alie");
  s.Bind("attack.fraction", &c->attack.fraction, "expected share of malicious clients, in [0, 1)");
  s.Bind("attack.scale", &c->attack.scale, "sign_flip and scale: the factor (0: 4 and 10)");
  s.Bind("attack.noise_std", &c->attack.noise_std, "gaussian: the noise's std. dev. (0: 1)");
  s.Bind("attack.alie_z", &c->attack.alie_z, "alie: z (0: the paper's z_max)");

  s.Refuse("run.min_available",
           "every virtual client is available between rounds, so a round starts with all of them");
  s.Refuse("eval.federated_every", "virtual clients do not run federated evaluation");
  for (const char* key : {"pace.max_idle", "pace.come_back_s", "pace.window_s"})
    s.Refuse(key, "pace steering sends deployed clients away until later; virtual clients stay");
  s.Refuse("split.pool", "the simulator trains the server parts on its own pool (sim.threads)");
  for (const char* key : {"output.event_log", "output.final_model"})
    s.Refuse(key, "the simulator writes its outputs to sim.report_dir");
  // The flat keys of earlier versions.
  const std::pair<const char*, const char*> renamed[] = {
      {"model", "run.model"},
      {"dataset", "data.dataset"},
      {"data_dir", "data.dir"},
      {"train_examples", "data.train_examples"},
      {"test_examples", "data.test_examples"},
      {"partition", "data.partition"},
      {"clients", "data.num_clients"},
      {"per_round", "run.clients_per_round"},
      {"rounds", "run.rounds"},
      {"over_selection", "run.over_selection"},
      {"min_completed", "run.min_completed"},
      {"round_timeout_s", "run.round_timeout_s"},
      {"seed", "run.seed"},
      {"init_seed", "run.init_seed"},
      {"threads", "sim.threads"},
      {"strategy", "run.strategy"},
      {"codec", "run.codec"},
      {"download_codec", "run.download_codec"},
      {"trainer", "sim.trainer"},
      {"eval_every", "eval.every"},
      {"eval_batch", "eval.batch_size"},
      {"target_accuracy", "sim.target_accuracy"},
      {"report_dir", "sim.report_dir"},
      {"synthetic.height", "data.synthetic.height"},
      {"synthetic.width", "data.synthetic.width"},
      {"synthetic.noise", "data.synthetic.noise"},
  };
  for (const auto& [from, to] : renamed) s.Rename(from, to);
}

RunConfig SimConfig::EffectiveRun() const {
  RunConfig r = run;
  r.round.min_available = data.num_clients;
  // Differential privacy samples from the whole population unless told otherwise.
  if (r.round.dp.enabled && r.round.dp.population == 0) r.round.dp.population = data.num_clients;
  r.event_log.clear();
  r.final_model.clear();
  return r;
}

Status SimConfig::Validate() const {
  TRIB_RETURN_IF_ERROR(data.Validate());
  if (data.dataset == "files" && (data.train.empty() || data.test.empty()))
    return KeyError(
        data.train.empty() ? "data.train" : "data.test",
        "is required with data.dataset = 'files': the simulator trains on data.train and "
        "evaluates on data.test");
  TRIB_RETURN_IF_ERROR(EffectiveRun().Validate());
  const int64_t per_round = run.round.clients_per_round;
  if (run.round.fraction == 0.0 && per_round > data.num_clients)
    return KeyError("run.clients_per_round", fmt::format("= {} must be <= data.num_clients = {}",
                                                         per_round, data.num_clients));
  if (threads < 0 || threads > 1024)
    return KeyError("sim.threads", "must be in [0, 1024] (0: every core)");
  if (target_accuracy < 0.0 || target_accuracy > 1.0)
    return KeyError("sim.target_accuracy", "must be in [0, 1] (a fraction, 0: none)");
  if (residual_max_age_rounds < 0)
    return KeyError("residual.max_age_rounds", "must be >= 0 (0: never)");
  if (!(residual_keep_fraction > 0.0) || residual_keep_fraction > 1.0)
    return KeyError("residual.keep_fraction", "must be in (0, 1]");
  if (report_dir.empty()) return KeyError("sim.report_dir", "must not be empty");
  TRIB_RETURN_IF_ERROR(tier.Validate());
  if (tier.aggregators > 0 && run.round.asynchronous())
    return KeyError("tier.aggregators",
                    "cannot be used with run.mode = 'async': asynchronous steps do not run through "
                    "the aggregation tier yet");
  if (tier.aggregators > 0 && run.round.secagg.enabled)
    return KeyError("tier.aggregators",
                    "cannot be used with secagg.enabled in the simulator in this version: it "
                    "models the tier's plaintext path (secure aggregation per group runs between "
                    "real processes: docs/tier.md)");
  if (stop_at_target && target_accuracy <= 0.0)
    return KeyError("sim.stop_at_target", "needs sim.target_accuracy > 0");
  if (run.round.asynchronous() && !attack.kind.empty() && attack.kind != "none")
    return KeyError("attack.kind",
                    "cannot be used with run.mode = 'async' in this version: the attacks are "
                    "prepared per synchronous round attempt");
  if (run.round.asynchronous() && !run.checkpoint_dir.empty())
    return KeyError("output.checkpoint_dir",
                    "cannot be used with run.mode = 'async' in the simulator in this version: its "
                    "checkpoint would not hold the tasks in flight, so a resumed run would differ");
  // The simulator's state file is written after the coordinator's checkpoint of the same round;
  // a crash between the two must leave an older pair to resume from.
  if (!run.checkpoint_dir.empty() && run.keep_checkpoints < 2)
    return KeyError("output.keep_checkpoints",
                    "must be >= 2 in the simulator: its state file is written after the "
                    "checkpoint, and a crash between the two falls back to the pair before");
  if (resume && run.checkpoint_dir.empty())
    return KeyError(
        "output.checkpoint_dir",
        "is needed to resume (--resume): the directory the run wrote its checkpoints to");
  return attack.Validate();
}

std::vector<std::string> ChangedSimKeys(const SimConfig& config) {
  SimConfig defaults, copy = config;
  ConfigSchema a("tributary-sim"), b("tributary-sim");
  BindSimConfig(a, &defaults);
  BindSimConfig(b, &copy);
  std::vector<std::string> out;
  for (const ConfigSchema::Key* k : b.keys())
    if (k->value_text() != a.Find(k->name())->value_text()) out.push_back(k->name());
  return out;
}

}  // namespace tributary
