#include "coordinator/run_driver.h"

#include "coordinator/tier_config.h"

#include <chrono>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "aggregation/strategy_factory.h"
#include "coordinator/checkpoint.h"
#include "coordinator/run_engine_factory.h"
#include "core/check.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/model_layout.h"
#include "train/model_file.h"
#include "tributary/safetensors.h"

namespace tributary {
namespace {

// The starting weights from run.initial_model, read through the Env and parsed with the bounded
// safetensors reader. When the run also names a model, the file must have its layout.
Result<ModelWeights> LoadInitialModel(Env* env, const RunConfig& c,
                                      const std::optional<ModelSpec>& spec) {
  const std::string& path = c.initial_model;
  Result<std::vector<uint8_t>> bytes = env->ReadFile(path, kMaxCheckpointBytes);
  if (!bytes.ok()) return bytes.status().WithContext("key 'run.initial_model'");
  Result<ModelWeights> model = ParseSafetensors(*bytes);
  if (!model.ok())
    return model.status().WithContext(fmt::format("key 'run.initial_model' = '{}'", path));
  if (model->size() == 0)
    return Status::InvalidArgument(
        fmt::format("key 'run.initial_model' = '{}' holds no weights", path));
  for (size_t t = 0; t < model->num_tensors(); ++t) {
    std::span<const float> v = model->tensor(t);
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i]))
        return Status::InvalidArgument(
            fmt::format("key 'run.initial_model' = '{}': tensor '{}' holds {} at index {}", path,
                        model->tensors()[t].name, v[i], i));
  }
  if (spec) {
    TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(*spec));
    TRIB_ASSIGN_OR_RETURN(ModelWeights want, ModelWeights::Create(layout));
    const std::string diff = LayoutDifference(LayoutOf(*model), "run.initial_model", LayoutOf(want),
                                              "run.model '" + c.model + "'");
    if (!diff.empty())
      return Status::InvalidArgument(fmt::format(
          "key 'run.initial_model' = '{}' does not have the layout of run.model '{}': {}", path,
          c.model, diff));
  }
  return model;
}

// 128 random bits as 32 hex digits, from the OS's entropy (not the run's seeded streams: two runs
// of one config must not share it).
std::string NewRunUid() {
  std::random_device rd;
  std::string uid;
  for (int i = 0; i < 4; ++i) uid += fmt::format("{:08x}", static_cast<uint32_t>(rd()));
  return uid;
}

}  // namespace

RunDriver::~RunDriver() = default;

Result<std::unique_ptr<RunDriver>> RunDriver::Create(const RunConfig& config, Options options) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  std::unique_ptr<RunDriver> d(new RunDriver());
  d->config_ = config;
  d->env_ = options.env ? options.env : Env::Default();
  d->options_ = std::move(options);
  RunConfig& c = d->config_;

  Result<std::unique_ptr<Strategy>> strategy =
      MakeTierStrategy(TierConfig{c.round, c.strategy, c.server_lr});
  if (!strategy.ok()) return strategy.status();  // names the key
  // A rule that needs n updates (Krum: n > 2f + 2, ...) must get them in every round that closes.
  const int64_t min_round =
      c.round.min_completed > 0 ? c.round.min_completed : c.round.clients_per_round;
  if (Status s = ValidateStrategyFor(**strategy, min_round); !s.ok())
    return s.WithContext("keys 'run.strategy' and 'run.min_completed'");
  if (float mu = (*strategy)->client_proximal_mu(); mu > 0.0f) c.round.fit.proximal_mu = mu;

  std::optional<ModelSpec> spec = d->options_.model_spec;
  if (!spec && !c.model.empty() && !d->options_.initial_model) {
    // Without the data's shape: a model file as it states itself, a built-in for Fashion-MNIST.
    Result<ModelSpec> named =
        IsModelFilePath(c.model) ? LoadModelFile(c.model) : ModelSpecByName(c.model);
    if (!named.ok()) return named.status().WithContext("key 'run.model'");
    spec = std::move(*named);
  }
  ModelWeights model;
  if (d->options_.initial_model) {
    model = std::move(*d->options_.initial_model);
    d->options_.initial_model.reset();
  } else if (!c.initial_model.empty()) {
    TRIB_ASSIGN_OR_RETURN(model, LoadInitialModel(d->env_, c, spec));
  } else {
    Result<ModelWeights> init = InitWeights(*spec, c.init_seed);
    if (!init.ok()) return init.status().WithContext("key 'run.model'");
    model = std::move(*init);
  }
  if (c.round.split.enabled()) TRIB_RETURN_IF_ERROR(d->SetUpSplit(spec, &model));
  if (c.round.federate == "unfrozen") TRIB_RETURN_IF_ERROR(d->SetUpFederated(spec, &model));
  uint64_t rounds_done = 0, version = 0;
  if (d->options_.resume)
    TRIB_RETURN_IF_ERROR(d->Resume(**strategy, &model, &rounds_done, &version));
  else if (!c.checkpoint_dir.empty())
    TRIB_RETURN_IF_ERROR(d->SetAsidePreviousCheckpoints());

  RunStarted& st = d->started_;
  st.model = c.model;
  st.initial_model = c.initial_model;
  // What the run starts from is the whole model, in a split run and a partly federated one too.
  std::optional<ModelWeights> joined;
  if (d->split_) {
    TRIB_ASSIGN_OR_RETURN(joined, JoinWeights(d->split_->split(), model, d->split_->weights()));
  }
  if (d->subset_) {
    TRIB_ASSIGN_OR_RETURN(joined, d->subset_->Join(model, d->frozen_));
  }
  const ModelWeights& whole = joined ? *joined : model;
  st.tensors = whole.num_tensors();
  st.strategy = c.strategy;
  st.codec = c.round.codec;
  st.download_codec = c.round.download_codec;
  st.rounds = c.round.rounds;
  st.clients_per_round = c.round.clients_per_round;
  st.parameters = whole.size();
  st.rounds_done = rounds_done;
  st.model_version = version;
  st.model_hash = whole.content_hash();
  st.mode = c.round.mode;
  if (st.run_uid.empty()) st.run_uid = NewRunUid();

  RunDriver* self = d.get();
  RunEngine::Hooks hooks;
  hooks.on_round_opened = [self](uint64_t round, int64_t attempt, int64_t selected) {
    if (self->split_) self->split_->OpenRound(round, self->config_.round.fit);
    self->Publish(RoundOpened{round, attempt, selected, self->engine_->model_version()});
  };
  hooks.on_accepted = [self](const std::string& id, uint64_t round, uint64_t n, uint64_t bytes,
                             const std::optional<UpdateStaleness>& staleness,
                             const std::string& via) {
    if (self->split_) self->split_->Accept(id, n);
    self->Publish(UpdateAccepted{round, id, n, bytes, staleness, via});
  };
  hooks.on_refused = [self](const std::string& id, uint64_t round, const Status& why) {
    self->Publish(UpdateRefused{round, id, why.message(), std::string(StatusCodeName(why.code()))});
  };
  hooks.on_round_failed = [self](uint64_t round, int64_t attempt, const std::string& why) {
    if (self->split_) self->split_->AbandonRound();
    self->Publish(RoundFailed{round, attempt, why});
  };
  hooks.on_federated_eval = [self](const FederatedEvalSummary& e) {
    self->Publish(FederatedEvaluated{e});
  };
  hooks.on_round_complete = [self](const RoundSummary& s, const ModelWeights& m) {
    self->OnRoundComplete(s, m);
  };
  TRIB_ASSIGN_OR_RETURN(d->engine_,
                        MakeRunEngine(c.round, std::move(*strategy), std::move(model), rounds_done,
                                      version, d->dispatches_, std::move(hooks)));
  if (!d->privacy_state_.empty()) {
    if (Status s = d->engine_->mutable_dp()->LoadState(d->privacy_state_); !s.ok())
      return s.WithContext("checkpoint " + d->started_.resumed_from);
    const PrivacySpent spent = d->engine_->dp()->Spent();
    Log().info("resume: differential privacy goes on from epsilon {:.4g} after {} rounds",
               spent.epsilon, d->engine_->dp()->rounds_charged());
  }
  return d;
}

Status RunDriver::Resume(Strategy& strategy, ModelWeights* model, uint64_t* rounds_done,
                         uint64_t* version) {
  const std::string& dir = config_.checkpoint_dir;
  if (dir.empty())
    return Status::InvalidArgument("resuming needs a checkpoint directory (output.checkpoint_dir)");
  Result<CheckpointState> ck = LoadCheckpoint(env_, dir, static_cast<int>(config_.keep_checkpoints),
                                              options_.check_checkpoint);
  if (!ck.ok()) {
    if (ck.status().code() != StatusCode::kNotFound) return ck.status().WithContext("resuming");
    if (!options_.start_if_no_checkpoint)
      return Status::NotFound("resuming: there is no checkpoint in " + dir +
                              " (output.checkpoint_dir) to resume from");
    Log().info("resume: no checkpoint in {} yet; starting a new run", dir);
    return Status::Ok();
  }
  for (const std::string& why : ck->skipped) Log().warn("resume: skipping a checkpoint: {}", why);
  // The rounds after an older checkpoint were released (and charged) once already: with
  // differential privacy, falling back to it would release them again and count them once.
  if (config_.round.dp.enabled && !ck->skipped.empty())
    return Status::FailedPrecondition(fmt::format(
        "resuming: differential privacy: a newer checkpoint than {} ({} rounds done) cannot be "
        "read, and resuming from it would release the rounds after it again without counting "
        "their first release; restore the newer checkpoint, or start a new run with a new budget",
        ck->path, ck->rounds_done));
  if (!ck->skipped.empty())
    Log().warn("resume: falling back to {} ({} rounds done)", ck->path, ck->rounds_done);
  const std::string path = ck->path;
  // A split run's checkpoint holds the whole model; the engine and the server part take theirs.
  if (split_) {
    TRIB_ASSIGN_OR_RETURN(ModelWeights whole,
                          JoinWeights(split_->split(), *model, split_->weights()));
    if (!ck->model.same_layout(whole))
      return Status::InvalidArgument(fmt::format(
          "checkpoint {} holds a model of another layout than this run's: {}", path,
          LayoutDifference(LayoutOf(ck->model), "the checkpoint", LayoutOf(whole), "this run")));
    TRIB_ASSIGN_OR_RETURN(auto parts, SplitWeights(split_->split(), ck->model));
    TRIB_RETURN_IF_ERROR(split_->LoadWeights(parts.second));
    ck->model = std::move(parts.first);
  }
  // A partly federated run's checkpoint holds the whole model; the engine takes the federated
  // tensors, the driver the frozen rest (the run's, which the checkpoint keeps as they were).
  if (subset_) {
    TRIB_ASSIGN_OR_RETURN(ModelWeights whole, subset_->Join(*model, frozen_));
    if (!ck->model.same_layout(whole))
      return Status::InvalidArgument(fmt::format(
          "checkpoint {} holds a model of another layout than this run's: {}", path,
          LayoutDifference(LayoutOf(ck->model), "the checkpoint", LayoutOf(whole), "this run")));
    TRIB_ASSIGN_OR_RETURN(ModelWeights rest, subset_->Rest(ck->model));
    if (!(rest == frozen_))
      Log().info("resume: the frozen tensors come from checkpoint {} (not the starting model's)",
                 path);
    SetFrozen(std::move(rest));
    TRIB_ASSIGN_OR_RETURN(ck->model, subset_->Selected(ck->model));
  }
  if (!ck->model.same_layout(*model))
    return Status::InvalidArgument(fmt::format(
        "checkpoint {} holds a model of another layout than this run's ({} tensors, {} "
        "parameters, against {} and {}): {}",
        path, ck->model.num_tensors(), ck->model.size(), model->num_tensors(), model->size(),
        LayoutDifference(LayoutOf(ck->model), "the checkpoint", LayoutOf(*model), "this run")));
  if (ck->model_name != config_.model)
    return Status::InvalidArgument(
        fmt::format("checkpoint {} was written for run.model '{}', but run.model is '{}' (the "
                    "layouts are the same; set run.model = '{}' to resume it)",
                    path, ck->model_name, config_.model, ck->model_name));
  if (ck->strategy != config_.strategy)
    return Status::InvalidArgument(
        fmt::format("checkpoint {} was written by strategy '{}', but run.strategy is '{}'", path,
                    ck->strategy, config_.strategy));
  if (Status s = strategy.LoadState(ck->strategy_state, ck->model.size()); !s.ok())
    return s.WithContext("checkpoint " + path);
  // A private run's epsilon must go on from where it was: resuming without its accountant would
  // spend the budget again.
  if (config_.round.dp.enabled && ck->privacy.empty())
    return Status::InvalidArgument(fmt::format(
        "checkpoint {} holds no differential privacy accounting, but dp.enabled is set: resuming "
        "would count epsilon from zero again",
        path));
  if (!config_.round.dp.enabled && !ck->privacy.empty())
    return Status::InvalidArgument(fmt::format(
        "checkpoint {} was written by a run with differential privacy; resuming it needs "
        "dp.enabled and the same dp.* settings",
        path));
  if (ck->mode != config_.round.mode)
    return Status::InvalidArgument(
        fmt::format("checkpoint {} was written by a run with run.mode = '{}', but run.mode is '{}'",
                    path, ck->mode, config_.round.mode));
  privacy_state_ = ck->privacy;
  dispatches_ = ck->dispatches;
  *model = std::move(ck->model);
  *rounds_done = ck->rounds_done;
  *version = ck->model_version;
  started_.resumed_from = path;
  started_.run_uid = ck->run_uid;
  started_.skipped_checkpoints = ck->skipped;
  return Status::Ok();
}

void RunDriver::AddObserver(RunObserver* observer) { observers_.push_back(observer); }

void RunDriver::Publish(const RunEvent& event) {
  for (RunObserver* o : observers_) {
    // An observer that fails (a log, a database, a dashboard) is reported; the run goes on.
    try {
      o->OnEvent(event);
    } catch (const std::exception& e) {
      Log().warn("an observer of the run failed on {}: {}", RunEventName(event), e.what());
    }
  }
}

void RunDriver::Start() {
  running_ = true;
  Publish(started_);
}

void RunDriver::Report(const ClientRefused& refusal) {
  if (running_) Publish(refusal);
}

Status RunDriver::SetUpSplit(const std::optional<ModelSpec>& spec, ModelWeights* model) {
  const SplitConfig& sc = config_.round.split;
  if (!spec)
    return Status::InvalidArgument(
        "key 'split.mode' needs run.model to name the model: the cut is one of its layers");
  const int64_t cut = sc.cut > 0 ? sc.cut : spec->cut;
  if (cut == 0)
    return Status::InvalidArgument(fmt::format(
        "key 'split.mode' needs a cut: set split.cut, or cut in the model file (run.model '{}' "
        "names none)",
        config_.model));
  Result<SplitModel> split =
      CutModel(*spec, static_cast<size_t>(cut), static_cast<size_t>(sc.head));
  if (!split.ok())
    return split.status().WithContext(sc.head > 0 ? "keys 'split.cut' and 'split.head'"
                                                  : "key 'split.cut'");
  Result<std::pair<ModelWeights, ModelWeights>> parts = SplitWeights(*split, *model);
  if (!parts.ok()) return parts.status().WithContext("split learning's starting weights");
  SplitServerOptions o;
  o.split = std::move(*split);
  TRIB_ASSIGN_OR_RETURN(o.mode, ParseSplitMode(sc.mode));
  o.codec = sc.codec;
  o.threads = static_cast<int>(sc.threads);
  TRIB_ASSIGN_OR_RETURN(split_, SplitServer::Create(std::move(o), parts->second));
  config_.round.split_cut = static_cast<uint32_t>(cut);
  config_.round.split_head = static_cast<uint32_t>(sc.head);
  *model = std::move(parts->first);
  if (sc.head > 0)
    Log().info(
        "split learning ({}, U-shaped): model {} cut before layers {} and {}; devices train {} of "
        "its {} parameters (the front and the head, with the labels), the coordinator the middle",
        sc.mode, spec->name, cut, sc.head, model->size(), model->size() + split_->weights().size());
  else
    Log().info(
        "split learning ({}): model {} cut before layer {}; devices train {} of its {} "
        "parameters, the coordinator the rest",
        sc.mode, spec->name, cut, model->size(), model->size() + split_->weights().size());
  return Status::Ok();
}

Status RunDriver::SetUpFederated(const std::optional<ModelSpec>& spec, ModelWeights* model) {
  if (!spec)
    return Status::InvalidArgument(
        "key 'run.federate' = 'unfrozen' needs run.model to name the model: which layers are "
        "frozen is part of its definition (docs/models.md)");
  Result<std::vector<uint32_t>> unfrozen = UnfrozenTensors(*spec);
  if (!unfrozen.ok()) return unfrozen.status().WithContext("key 'run.federate'");
  if (unfrozen->size() == model->num_tensors()) {
    Log().info("run.federate = 'unfrozen': model {} freezes no layer, so every tensor is federated",
               spec->name);
    return Status::Ok();
  }
  if (unfrozen->empty())
    return Status::InvalidArgument(fmt::format(
        "key 'run.federate' = 'unfrozen': every layer of model {} with parameters is frozen, so "
        "there is nothing to train or aggregate",
        spec->name));
  Result<TensorSubset> subset = TensorSubset::Create(*model, std::move(*unfrozen));
  if (!subset.ok()) return subset.status().WithContext("key 'run.federate'");
  subset_ = std::move(*subset);
  TRIB_ASSIGN_OR_RETURN(ModelWeights rest, subset_->Rest(*model));
  TRIB_ASSIGN_OR_RETURN(*model, subset_->Selected(*model));
  SetFrozen(std::move(rest));
  Log().info(
      "run.federate = 'unfrozen': {} of model {}'s {} tensors ({} of {} parameters) are "
      "aggregated and sent; the frozen {} parameters go to each client once per connection",
      model->num_tensors(), spec->name, model->num_tensors() + frozen_.num_tensors(), model->size(),
      model->size() + frozen_.size(), frozen_.size());
  return Status::Ok();
}

void RunDriver::SetFrozen(ModelWeights rest) {
  auto part = std::make_shared<FrozenPart>();
  part->federated = subset_->indices();
  part->hash = rest.content_hash();
  part->values = SharedFloats(std::vector<float>(rest.data().begin(), rest.data().end()));
  frozen_ = std::move(rest);
  config_.round.frozen = std::move(part);
}

ModelWeights RunDriver::client_model() const {
  if (subset_) return model();
  return engine_->model();
}

ModelWeights RunDriver::model() const {
  if (subset_) {
    Result<ModelWeights> whole = subset_->Join(engine_->model(), frozen_);
    TRIB_CHECK(whole.ok(), "the federated and frozen tensors of the run's model do not join");
    return std::move(*whole);
  }
  if (!split_) return engine_->model();
  Result<ModelWeights> whole = JoinWeights(split_->split(), engine_->model(), split_->weights());
  TRIB_CHECK(whole.ok(), "the parts of a split run's model do not join");
  return std::move(*whole);
}

void RunDriver::NoteTasks(const std::vector<RunEngine::Outgoing>& outbox) {
  if (!split_) return;
  for (const RunEngine::Outgoing& out : outbox)
    if (const auto* task = std::get_if<TaskAssignment>(&out.message))
      split_->AddClient(task->round, out.client_id);
}

void RunDriver::OnRoundComplete(const RoundSummary& closed_round,
                                const ModelWeights& device_or_whole) {
  // A split run: the server part closes the round too, the round's summary gains its figures, and
  // the rest sees the whole model.
  RoundSummary s = closed_round;
  std::optional<ModelWeights> joined;
  if (subset_) joined = model();
  if (split_) {
    const SplitServerStats before = split_stats_;
    split_->CloseRound();
    split_stats_ = split_->stats();
    joined = model();
    SplitRoundReport& r = s.split.emplace();
    r.batches = split_stats_.batches - before.batches;
    r.samples = split_stats_.samples - before.samples;
    r.bytes_in = split_stats_.bytes_in - before.bytes_in;
    r.bytes_out = split_stats_.bytes_out - before.bytes_out;
    r.server_seconds = split_stats_.compute_seconds - before.compute_seconds;
    // U-shaped, both cuts' values travel each way: the first's activations and the head's
    // gradients in, the middle's outputs and the first cut's gradients out.
    const bool u = split_->split().u_shaped();
    Log().info(
        "split learning, round {}: {} batches ({} samples), {:.1f} KiB of {} in and {:.1f} KiB "
        "of {} out ({:.1f} KiB per batch each way), {:.3f} s of server compute",
        s.round, r.batches, r.samples, r.bytes_in / 1024.0,
        u ? "activations and head gradients" : "activations", r.bytes_out / 1024.0,
        u ? "outputs and gradients" : "gradients",
        r.batches == 0 ? 0.0 : r.bytes_in / 1024.0 / static_cast<double>(r.batches),
        r.server_seconds);
  }
  const ModelWeights& m = joined ? *joined : device_or_whole;
  const bool due = s.round % static_cast<uint64_t>(config_.checkpoint_every) == 0 ||
                   s.round >= static_cast<uint64_t>(config_.round.rounds);
  if (!config_.checkpoint_dir.empty() && due) {
    CheckpointState ck;
    ck.mode = config_.round.mode;
    ck.dispatches = engine_->dispatches();
    ck.rounds_done = s.round;
    ck.model_version = s.model_version;
    ck.seed = config_.round.seed;
    ck.strategy = config_.strategy;
    ck.model_name = config_.model;
    ck.model = m;
    if (const DpAggregator* dp = engine_->dp()) ck.privacy = dp->SaveState();
    ck.run_uid = started_.run_uid;
    const auto write_start = std::chrono::steady_clock::now();
    Status saved = [&]() -> Status {
      TRIB_ASSIGN_OR_RETURN(ck.strategy_state, engine_->strategy().SaveState());
      return SaveCheckpoint(env_, config_.checkpoint_dir, ck,
                            static_cast<int>(config_.keep_checkpoints));
    }();
    // Real I/O, so wall time (not the run's Clock, which is simulated in the simulator).
    const double write_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - write_start).count();
    Publish(CheckpointWritten{s.round, CheckpointPath(config_.checkpoint_dir),
                              saved.ok() ? std::string() : saved.ToString(), write_seconds});
  }
  RoundClosed closed{s, std::nullopt};
  if (options_.evaluator && config_.eval_every > 0 &&
      s.round % static_cast<uint64_t>(config_.eval_every) == 0) {
    Result<EvalResult> e = options_.evaluator->Evaluate(m);
    if (e.ok()) {
      closed.evaluation =
          Evaluated{s.round, s.model_version, e->loss, e->accuracy, e->num_examples};
      Publish(*closed.evaluation);
    } else {
      Log().error("evaluation of round {} failed: {}", s.round, e.status().ToString());
    }
  }
  Publish(closed);
}

Status RunDriver::SetAsidePreviousCheckpoints() {
  const std::string& dir = config_.checkpoint_dir;
  const int keep = static_cast<int>(std::max<int64_t>(config_.keep_checkpoints, 1));
  std::vector<std::string> found;
  for (int g = 0; g < keep; ++g)
    if (env_->FileExists(CheckpointPath(dir, g))) found.push_back(CheckpointPath(dir, g));
  if (found.empty()) return Status::Ok();
  const std::string aside = (std::filesystem::path(dir) / "previous").string();
  TRIB_RETURN_IF_ERROR(env_->CreateDirs(aside).WithContext("key 'output.checkpoint_dir'"));
  for (int g = 0; g < keep; ++g) {  // an earlier new run's leftovers go: one run's set at a time
    const std::string old = CheckpointPath(aside, g);
    if (env_->FileExists(old)) TRIB_RETURN_IF_ERROR(env_->RemoveFile(old));
  }
  for (const std::string& path : found) {
    const std::string to =
        (std::filesystem::path(aside) / std::filesystem::path(path).filename()).string();
    TRIB_RETURN_IF_ERROR(env_->RenameFile(path, to).WithContext("setting aside " + path));
  }
  TRIB_RETURN_IF_ERROR(env_->SyncDir(aside));
  TRIB_RETURN_IF_ERROR(env_->SyncDir(dir));
  Log().warn(
      "a new run in {} (output.checkpoint_dir): the {} checkpoint(s) of the run before it are "
      "moved to {} (--resume continues a run instead of starting one)",
      dir, found.size(), aside);
  return Status::Ok();
}

Status RunDriver::Finish(Status outcome) {
  if (finished_) return *finished_;
  RunFinished f;
  f.rounds_done = engine_->rounds_done();
  const ModelWeights whole = model();
  f.model_hash = whole.content_hash();
  f.stopped = engine_->stop_reason();
  const bool complete = engine_->rounds_done() >= static_cast<uint64_t>(config_.round.rounds) ||
                        engine_->budget_spent();
  if (outcome.ok() && complete && !config_.final_model.empty()) {
    const SafetensorsMetadata meta{{"model", config_.model},
                                   {"rounds", std::to_string(engine_->rounds_done())},
                                   {"producer", options_.producer}};
    Status saved = WriteFileAtomic(env_, config_.final_model, SerializeSafetensors(whole, meta));
    if (saved.ok())
      f.final_model = config_.final_model;
    else
      outcome = saved.WithContext("saving the final model");
  }
  f.ok = outcome.ok();
  f.status = outcome.ToString();
  finished_ = outcome;
  running_ = false;
  Publish(f);
  return outcome;
}

}  // namespace tributary
