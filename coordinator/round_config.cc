#include "coordinator/round_config.h"

#include <fmt/format.h>

#include <cmath>

#include "compression/codec.h"
#include "compression/codec_spec.h"
#include "coordinator/staleness_weight.h"
#include "core/fit_config.h"

namespace tributary {

void BindRoundConfig(ConfigSchema& s, RoundConfig* r) {
  s.Bind("run.mode", &r->mode,
         "'sync': rounds wait for K updates or their deadline; 'async': buffered asynchronous "
         "aggregation (FedBuff), run.rounds counts steps")
      .Flag("--mode");
  s.Bind("run.concurrency", &r->async.concurrency,
         "async: clients training at once (C); 0: run.buffer_size")
      .Flag("--concurrency");
  s.Bind("run.buffer_size", &r->async.buffer_size,
         "async: accepted updates per step (K); 0: run.clients_per_round")
      .Flag("--buffer-size");
  s.Bind("run.max_staleness", &r->async.max_staleness,
         "async: an update computed against a model more versions behind the current one is "
         "refused");
  s.Bind("run.staleness_weight", &r->async.staleness_weight,
         "async: how an update is discounted by its staleness t: constant, sqrt (1/sqrt(1+t)), "
         "polynomial:A ((1+t)^-A), hinge:A:B");
  s.Bind("run.federate", &r->federate,
         "which tensors are aggregated and sent: all, or unfrozen (only those of the model's "
         "layers not marked frozen)");
  s.Bind("run.rounds", &r->rounds, "rounds to run").Flag("--rounds");
  s.Bind("run.clients_per_round", &r->clients_per_round,
         "updates each round waits for (K); ignored when run.fraction > 0")
      .Flag("--clients-per-round");
  s.Bind("run.fraction", &r->fraction,
         "when > 0, K = ceil(fraction * connected clients) as each attempt begins, instead of "
         "clients_per_round");
  s.Bind("run.min_available", &r->min_available, "idle clients needed to start a round")
      .Flag("--min-available");
  s.Bind("run.over_selection", &r->over_selection,
         "select ceil(K * this) clients to absorb dropouts, in [1, 10]");
  s.Bind("run.min_completed", &r->min_completed,
         "updates that close a round at its deadline (0: all K)")
      .Flag("--min-completed");
  s.Bind("run.round_timeout_s", &r->round_timeout, "a round's deadline, in seconds");
  s.Bind("run.max_round_attempts", &r->max_round_attempts,
         "a failed round is retried; the run fails after this many attempts (0: never)");
  s.Bind("run.cooldown_max_rounds", &r->cooldown_max_rounds,
         "a selected client that sends no update by the deadline, or a refused one, sits out 1, 2, "
         "4, ... rounds, at most this many (0: never)");
  s.Bind("run.seed", &r->seed, "seeds client selection and the clients' training").Flag("--seed");
  s.Bind("pace.max_idle", &r->pace_max_idle,
         "pace steering: idle clients kept connected while a round runs; the others are told when "
         "to come back (0: off)");
  s.Bind("pace.come_back_s", &r->pace_come_back,
         "pace steering: the earliest a client told to come back reconnects, in seconds");
  s.Bind("pace.window_s", &r->pace_window,
         "pace steering: clients reconnect at a time drawn uniformly in a window this long, in "
         "seconds (0: derived from the clients sent away and the rounds' pace)");
  s.Bind("split.mode", &r->split.mode,
         "split learning (docs/split.md): sflv1 (a server part per client, averaged) or sflv2 (one "
         "server part, trained in turn); \"\": off")
      .Flag("--split");
  s.Bind("split.cut", &r->split.cut,
         "split learning: the device part holds layers 0 .. cut-1 (0: the model file's cut)");
  s.Bind("split.head", &r->split.head,
         "split learning, U-shaped (label-private): the device also holds layers head .. end and "
         "the labels, the coordinator only layers cut .. head-1 (0: off; needs sflv1)");
  s.Bind("split.codec", &r->split.codec,
         "split learning: how activations and gradients travel: dense, q8, topk(F, ef=0)+q8, ...");
  s.Bind("split.threads", &r->split.threads, "split learning: CPU threads of each server part");
  s.Bind("split.pool", &r->split.pool,
         "split learning: threads that train server parts at once (0: the CPU count)");
  s.Bind("run.codec", &r->codec, "the update codec every client uses (docs/compression.md)")
      .Flag("--codec");
  s.Bind("run.download_codec", &r->download_codec,
         "how the global model travels to clients: dense, q8, q8+zstd, ...");
  s.Bind("run.min_num_examples", &r->min_num_examples,
         "an update claiming fewer examples is refused");
  s.Bind("run.max_num_examples", &r->max_num_examples,
         "the most examples a client may announce at Hello (its updates may claim no more than "
         "it announced)");
  s.Bind("run.max_weight", &r->max_weight,
         "the most an update weighs in the aggregate, whatever its num_examples (0: no cap; 1: "
         "every client the same)");
  s.Bind("eval.federated_every", &r->federated_eval_every,
         "ask clients to evaluate the new model every k rounds (0: never)");
  s.Bind("secagg.enabled", &r->secagg.enabled,
         "secure aggregation: the coordinator learns only each round's sum (docs/privacy.md)");
  s.Bind("secagg.clip", &r->secagg.clip, "update values are clipped to [-clip, clip]");
  s.Bind("secagg.quant_bits", &r->secagg.quant_bits,
         "quantization levels per value: 2^bits (a qB run.codec sets B instead)");
  s.Bind(
      "secagg.max_weight", &r->secagg.max_weight,
      "the cap on a client's weight (num_examples); a round uses its clients' largest when lower");
  s.Bind("secagg.degree", &r->secagg.degree,
         "neighbours each client shares keys with (0: sized for secagg.max_dropout)");
  s.Bind("secagg.threshold", &r->secagg.threshold,
         "shares that rebuild a secret (0: a majority of the degree)");
  s.Bind("secagg.max_dropout", &r->secagg.max_dropout,
         "the dropout the default degree tolerates (a round that loses more is retried)");
  s.Bind("secagg.min_clients", &r->secagg.min_clients, "the fewest clients a phase may end with");
  s.Bind("secagg.phase_timeout_s", &r->secagg.phase_timeout,
         "each key and unmask phase's deadline, in seconds");
  BindDpConfig(s, &r->dp);
  BindFitConfig(s, &r->fit);
}

Status SecAggCodecRefusal(const std::string& codec) {
  Result<PipelineSpec> spec = ParseCodecSpec(codec);
  if (!spec.ok()) return spec.status().WithContext("key 'run.codec'");
  auto refuse = [&](const char* why) {
    return Status::InvalidArgument(fmt::format(
        "'run.codec' = '{}' cannot be used with secure aggregation: {} (with it use 'dense', "
        "'qB' (B bits per value in the masked sum), 'randk(F)' (the same coordinates for every "
        "client) or 'randk(F)+qB')",
        codec, why));
  };
  if (spec->sparsifier == Sparsifier::kTopK)
    return refuse(
        "top-k sends each client's own largest coordinates, and which ones they are "
        "would reveal its update; the masked sum needs the same coordinates from all");
  if (spec->values == ValueCoding::kSign)
    return refuse(
        "sign sends a per-chunk scale each client picks from its own update; the masked "
        "sum needs one integer scale for everyone");
  if (spec->zstd) return refuse("masked values are uniformly random: zstd cannot shrink them");
  return Status::Ok();
}

Status RoundConfig::ValidateAsync() const {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("key " + what); };
  if (async.concurrency < 0 || async.concurrency > 1'000'000)
    return bad(fmt::format("'run.concurrency' = {} must be in [0, 1000000] (0: run.buffer_size)",
                           async.concurrency));
  if (async.buffer_size < 0 || async.buffer_size > 1'000'000)
    return bad(
        fmt::format("'run.buffer_size' = {} must be in [0, 1000000] (0: run.clients_per_round)",
                    async.buffer_size));
  if (async.max_staleness < 0 || async.max_staleness > 1'000'000)
    return bad(
        fmt::format("'run.max_staleness' = {} must be in [0, 1000000]", async.max_staleness));
  if (Result<StalenessWeight> w = StalenessWeight::Parse(async.staleness_weight); !w.ok())
    return w.status();
  if (fraction > 0.0)
    return bad(
        "'run.fraction' cannot be used with run.mode = 'async': a step takes a fixed number of "
        "updates (run.buffer_size)");
  if (secagg.enabled && Concurrency() < clients_per_round)
    return bad(fmt::format(
        "'run.concurrency' = {} is below run.clients_per_round = {}: with secure aggregation an "
        "asynchronous run dispatches cohorts of run.clients_per_round clients, each within "
        "run.concurrency",
        Concurrency(), clients_per_round));
  if (dp.enabled && dp.client_placement())
    return bad(
        "'dp.placement' = 'client' cannot be used with run.mode = 'async' in this version: each "
        "client's share of the noise is sized for a round's fewest inputs, which a cohort's "
        "dropouts and its staleness weight do not keep; use dp.placement = 'server'");
  if (dp.enabled && dp.sampling_mode() == DpSampling::kPoisson)
    return bad(
        "'dp.sampling' = 'poisson' cannot be used with run.mode = 'async': which clients train "
        "depends on their speed, not on a uniform sample, so each step is accounted at sampling "
        "rate 1 (without amplification); use dp.sampling = 'fixed'");
  return Status::Ok();
}

Status RoundConfig::ValidateSplit() const {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("key " + what); };
  if (split.mode != "sflv1" && split.mode != "sflv2")
    return bad(fmt::format(
        "'split.mode' = '{}' must be 'sflv1' (a server part per client, averaged), 'sflv2' (one "
        "server part, trained in turn) or \"\" (off)",
        split.mode));
  if (split.cut < 0) return bad(fmt::format("'split.cut' = {} must be >= 0", split.cut));
  if (split.head < 0) return bad(fmt::format("'split.head' = {} must be >= 0", split.head));
  if (split.head > 0 && split.mode != "sflv1")
    return bad(fmt::format(
        "'split.head' = {} (the U-shaped split) needs split.mode = 'sflv1', not '{}': each batch "
        "holds its server part across two round trips, so under sflv2 every client would wait for "
        "the others' links",
        split.head, split.mode));
  if (split.threads < 1 || split.threads > 256)
    return bad(fmt::format("'split.threads' = {} must be in [1, 256]", split.threads));
  if (split.pool < 0 || split.pool > 4096)
    return bad(
        fmt::format("'split.pool' = {} must be in [0, 4096] (0: the CPU count)", split.pool));
  Result<std::unique_ptr<Codec>> c = MakeCodec(split.codec);
  if (!c.ok()) return bad("'split.codec': " + c.status().message());
  if ((*c)->uses_error_feedback())
    return bad(fmt::format(
        "'split.codec' = '{}' uses error feedback, which would carry one batch's activations into "
        "the next; turn it off (e.g. 'topk(0.1, ef=0)')",
        split.codec));
  // What split learning cannot compose with, and why.
  if (asynchronous())
    return bad(
        "'split.mode' is for rounds (run.mode = 'sync'): the server part trains on each round's "
        "batches and is averaged when the round closes");
  if (secagg.enabled)
    return bad(
        "'split.mode' cannot be used with secagg.enabled: the server sees every batch's "
        "activations, so hiding the device parts' sum protects nothing it cannot already see");
  if (dp.enabled)
    return bad(
        "'split.mode' cannot be used with dp.enabled: the activations and labels the server sees "
        "are not covered by the device parts' noise");
  if (federated_eval_every > 0)
    return bad(
        "'eval.federated_every' cannot be used with split.mode: a device holds only its part of "
        "the model and cannot evaluate it; use eval.every (the coordinator's evaluation of the "
        "whole model)");
  if (fit.proximal_mu > 0.0f)
    return bad("'fit.proximal_mu' cannot be used with split.mode (FedProx's term is not split)");
  return Status::Ok();
}

Status RoundConfig::Validate() const {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("key " + what); };
  if (rounds < 1) return bad(fmt::format("'run.rounds' = {} must be >= 1", rounds));
  if (mode != "sync" && mode != "async")
    return bad(fmt::format("'run.mode' = '{}' must be 'sync' or 'async'", mode));
  if (asynchronous()) TRIB_RETURN_IF_ERROR(ValidateAsync());
  if (federate != "all" && federate != "unfrozen")
    return bad(fmt::format(
        "'run.federate' = '{}' must be 'all' or 'unfrozen' (only the tensors of layers not frozen)",
        federate));
  if (federate == "unfrozen" && split.enabled())
    return bad(
        "'run.federate' = 'unfrozen' cannot be used with split.mode: a split run's device part is "
        "already what travels");
  if (!(fraction >= 0.0 && fraction <= 1.0))
    return bad(fmt::format("'run.fraction' = {} must be in [0, 1]", fraction));
  if (fraction == 0.0 && clients_per_round < 1)
    return bad(fmt::format("'run.clients_per_round' = {} must be >= 1", clients_per_round));
  if (min_available < 1)
    return bad(fmt::format("'run.min_available' = {} must be >= 1", min_available));
  if (!(over_selection >= 1.0) || over_selection > 10.0)
    return bad(fmt::format("'run.over_selection' = {} must be in [1, 10]", over_selection));
  if (min_completed < 0)
    return bad(fmt::format("'run.min_completed' = {} must be >= 0 (0: all K)", min_completed));
  if (pace_max_idle < 0)
    return bad(fmt::format("'pace.max_idle' = {} must be >= 0 (0: off)", pace_max_idle));
  if (pace_come_back.count() < 0) return bad("'pace.come_back_s' must be >= 0");
  if (pace_window.count() < 0)
    return bad(
        "'pace.window_s' must be >= 0 (0: derived from the clients sent away and the "
        "rounds' pace)");
  if (pace_max_idle > 0 && asynchronous())
    return bad(
        "'pace.max_idle' is for rounds (run.mode = 'sync'): an asynchronous run keeps "
        "every slot busy, so it has no idle clients to send away");
  if (fraction == 0.0 && min_completed > clients_per_round)
    return bad(fmt::format("'run.min_completed' = {} exceeds run.clients_per_round = {}",
                           min_completed, clients_per_round));
  if (round_timeout.count() <= 0) return bad("'run.round_timeout_s' must be > 0");
  if (max_round_attempts < 0)
    return bad(fmt::format("'run.max_round_attempts' = {} must be >= 0 (0: retry forever)",
                           max_round_attempts));
  if (cooldown_max_rounds < 0 || cooldown_max_rounds > 1'000'000)
    return bad(
        fmt::format("'run.cooldown_max_rounds' = {} must be in [0, 1000000] (0: no cool-down)",
                    cooldown_max_rounds));
  TRIB_RETURN_IF_ERROR(ValidateFitConfig(fit));
  if (Result<std::unique_ptr<Codec>> c = MakeCodec(codec); !c.ok())
    return bad("'run.codec': " + c.status().message());
  if (Result<std::unique_ptr<Codec>> c = MakeDownloadCodec(download_codec); !c.ok())
    return bad("'run.download_codec': " + c.status().message());
  if (min_num_examples < 1 || min_num_examples > max_num_examples)
    return bad(fmt::format("'run.min_num_examples' = {} must be in [1, run.max_num_examples = {}]",
                           min_num_examples, max_num_examples));
  if (federated_eval_every < 0)
    return bad(
        fmt::format("'eval.federated_every' = {} must be >= 0 (0: never)", federated_eval_every));
  if (secagg.enabled) {
    if (Status why = SecAggCodecRefusal(codec); !why.ok()) return why;
    if (secagg.quant_bits < 1 || secagg.quant_bits > 24)
      return bad(fmt::format("'secagg.quant_bits' = {} must be in [1, 24]", secagg.quant_bits));
    if (!(secagg.clip > 0.0f) || !std::isfinite(secagg.clip))
      return bad(fmt::format("'secagg.clip' = {} must be finite and > 0", secagg.clip));
    if (secagg.degree < 0 || secagg.threshold < 0 || secagg.min_clients < 2)
      return bad("'secagg.degree' and 'secagg.threshold' must be >= 0, 'secagg.min_clients' >= 2");
    if (secagg.degree > 0 && secagg.threshold > secagg.degree)
      return bad(fmt::format("'secagg.threshold' = {} exceeds secagg.degree = {}", secagg.threshold,
                             secagg.degree));
    if (secagg.degree > 0 && secagg.threshold > 0 && 2 * secagg.threshold <= secagg.degree)
      return bad(fmt::format(
          "'secagg.threshold' = {} must be a majority of secagg.degree = {}: otherwise a "
          "coordinator could collect both secrets of a client from different neighbours",
          secagg.threshold, secagg.degree));
    if (!(secagg.max_dropout >= 0.0 && secagg.max_dropout < 0.5))
      return bad(fmt::format("'secagg.max_dropout' = {} must be in [0, 0.5)", secagg.max_dropout));
    if (secagg.phase_timeout.count() <= 0) return bad("'secagg.phase_timeout_s' must be > 0");
  }
  if (split.enabled()) {
    TRIB_RETURN_IF_ERROR(ValidateSplit());
  } else {
    // A split key set without split.mode would change nothing: say so, rather than run the whole
    // model (the keys were accepted in silence, whatever their values).
    const SplitConfig off;
    for (const auto& [key, changed] :
         {std::pair<const char*, bool>{"split.cut", split.cut != off.cut},
          {"split.head", split.head != off.head},
          {"split.codec", split.codec != off.codec},
          {"split.threads", split.threads != off.threads},
          {"split.pool", split.pool != off.pool}}) {
      if (changed)
        return Status::InvalidArgument(fmt::format(
            "key '{}' has no effect without split.mode ('sflv1' or 'sflv2'); set split.mode too, "
            "or remove it",
            key));
    }
  }
  if (dp.enabled) {
    TRIB_RETURN_IF_ERROR(dp.Validate(clients_per_round));
    if (fraction > 0.0)
      return bad(
          "'run.fraction' cannot be used with differential privacy: the noise is sized for a "
          "fixed run.clients_per_round");
    if (dp.client_placement() && !secagg.enabled)
      return bad(
          "'dp.placement' = 'client' needs secagg.enabled: without secure aggregation the "
          "coordinator sees each client's share of the noise, which is far less than the whole; "
          "use dp.placement = 'server'");
    if (!dp.client_placement() && secagg.enabled)
      return bad(
          "'dp.placement' = 'server' cannot be used with secagg.enabled: the coordinator sees only "
          "the sum and cannot clip each update; use dp.placement = 'client'");
    if (dp.target_epsilon > 0.0 && dp.noise_multiplier == 0.0)
      return bad(
          "'dp.target_epsilon' needs dp.noise_multiplier > 0: without noise epsilon is "
          "infinite");
  }
  return Status::Ok();
}

}  // namespace tributary
