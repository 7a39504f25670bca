#include "sim/simulator.h"

#include "core/log.h"
#include "core/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <queue>

#include <fmt/format.h>

#include "aggregation/partial_sum.h"
#include "client/secagg_task.h"
#include "client/task_executor.h"
#include "protocol/frame.h"
#include "protocol/message_codec.h"
#include "sim/layout_checked_factory.h"
#include "sim/sim_clock.h"
#include "sim/sim_job.h"
#include "sim/sim_wire.h"
#include "split/split_task_channel.h"
#include "train/model_file.h"

namespace tributary {
namespace {

double WallNow() { return SimWallNow(); }

// Split learning in simulated time: each batch of a virtual client goes to the run's server part
// (the driver's SplitServer) through the wire format both ways, framed as the transport would,
// and its count and framed bytes are recorded for the job's timing (DeviceModel::AddSplitExchange).
class SimSplitExchange final : public SplitExchange {
 public:
  SimSplitExchange(SplitServer& server, std::string client, SplitTaskChannel channel,
                   uint64_t stream, uint64_t* batches, uint64_t* bytes_up, uint64_t* bytes_down)
      : server_(server),
        client_(std::move(client)),
        channel_(std::move(channel)),
        stream_(stream),
        batches_(batches),
        bytes_up_(bytes_up),
        bytes_down_(bytes_down) {}

  Result<CutGradient> Exchange(std::span<const float> acts,
                               std::span<const uint8_t> labels) override {
    TRIB_ASSIGN_OR_RETURN(SplitActivations m, channel_.Activations(acts, labels));
    TRIB_ASSIGN_OR_RETURN(Message back, RoundTrip(Message(std::move(m))));
    ++*batches_;
    return channel_.Gradient(std::get<SplitGradient>(back));
  }
  // The U-shape: two round trips a batch, each through the wire both ways (one batch counted).
  Status ExchangeFront(std::span<const float> acts, int64_t samples,
                       std::span<float> middle) override {
    TRIB_ASSIGN_OR_RETURN(SplitActivations m,
                          channel_.FrontActivations(acts, static_cast<uint32_t>(samples)));
    TRIB_ASSIGN_OR_RETURN(Message back, RoundTrip(Message(std::move(m))));
    TRIB_ASSIGN_OR_RETURN(std::vector<float> out,
                          channel_.Middle(std::get<SplitActivations>(back), middle.size()));
    std::copy(out.begin(), out.end(), middle.begin());
    return Status::Ok();
  }
  Result<CutGradient> ExchangeHead(std::span<const float> gradient, double loss_sum,
                                   int64_t correct) override {
    TRIB_ASSIGN_OR_RETURN(SplitGradient up, channel_.HeadGradient(gradient, loss_sum, correct));
    TRIB_ASSIGN_OR_RETURN(Message back, RoundTrip(Message(std::move(up))));
    ++*batches_;
    return channel_.Gradient(std::get<SplitGradient>(back));
  }

 private:
  // `m` through the wire to the server part and its answer back, their bytes counted.
  Result<Message> RoundTrip(Message m) {
    uint64_t up = 0, down = 0;
    TRIB_ASSIGN_OR_RETURN(Message sent, ThroughWire(std::move(m), stream_, &up));
    TRIB_ASSIGN_OR_RETURN(Message answer, server_.OnMessage(client_, sent));
    TRIB_ASSIGN_OR_RETURN(Message back, ThroughWire(std::move(answer), stream_, &down));
    *bytes_up_ += up;
    *bytes_down_ += down;
    return back;
  }

  SplitServer& server_;
  std::string client_;
  SplitTaskChannel channel_;
  uint64_t stream_;
  uint64_t* batches_;
  uint64_t* bytes_up_;
  uint64_t* bytes_down_;
};

}  // namespace

Simulator::~Simulator() {
  if (ranks_ && ranks_->rank() == 0) StopRanks();  // a run that never started, or failed early
}

TimePoint Simulator::At(double seconds) const { return SimTimePoint(seconds); }

uint64_t Simulator::SplitRoundTrips() const {
  const SplitServer* split = driver_->split_server();
  return split != nullptr && split->split().u_shaped() ? 2 : 1;
}

std::string Simulator::Via(uint64_t index) const {
  return tier_ ? tier_->Name(tier_->Of(index)) : std::string();
}

void Simulator::NoteTier() {
  if (!tier_) return;
  const SimTier::Counts c = tier_->TakeCounts();
  pending_.tier = true;
  pending_.tier_bytes_down += c.bytes_down;
  pending_.tier_bytes_up += c.bytes_up;
  pending_.aggregator_seconds += c.seconds;
}

Result<std::unique_ptr<Simulator>> Simulator::Create(const SimConfig& config, DataSplits data,
                                                     const std::string& final_model, Env* env,
                                                     std::unique_ptr<TrainerFactory> trainers) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  if (!data.train) return Status::InvalidArgument("simulator: no training set to partition");
  std::unique_ptr<Simulator> s(new Simulator());
  s->config_ = config;
  s->data_ = data;
  const Dataset& train = *data.train;
  if (!config.run.model.empty()) {
    Result<ModelSpec> spec = ResolveModelSpec(
        config.run.model, {train.height, train.width, train.channels}, train.num_classes);
    if (!spec.ok()) return spec.status().WithContext("key 'run.model'");
    s->spec_ = std::move(*spec);
  }
  TRIB_ASSIGN_OR_RETURN(
      s->population_, Population::Create(data.train, config.data.partition, config.data.num_clients,
                                         config.data.seed));
  TRIB_ASSIGN_OR_RETURN(DeviceModel devices,
                        DeviceModel::Create(config.hetero, config.run.round.seed));
  s->devices_ = std::move(devices);
  s->pool_ = std::make_unique<ThreadPool>(static_cast<size_t>(config.threads));
  s->residuals_ = std::make_unique<ResidualStore>(config.residual_max_age_rounds,
                                                  config.residual_keep_fraction);
  s->controls_ = std::make_unique<ControlStore>();

  RunDriver::Options options;
  options.model_spec = s->spec_;
  options.env = env;
  options.producer = "tributary-sim";
  // Resuming: the newest good checkpoint whose simulator state is there and good too.
  auto resumed = std::make_shared<std::optional<SimCheckpoint>>();
  if (config.resume) {
    options.resume = true;
    options.check_checkpoint = [resumed, env = env ? env : Env::Default(),
                                dir = config.run.checkpoint_dir,
                                settings = ResumeSettings(config)](const CheckpointState& ck) {
      Result<SimCheckpoint> st = LoadSimCheckpoint(env, dir, ck.rounds_done, ck.run_uid);
      if (!st.ok()) return st.status();
      if (std::string diff = ResumeSettingsDifference(st->settings, settings); !diff.empty())
        return Status::InvalidArgument(fmt::format(
            "{} was written with other settings, so the resumed run would differ from the one "
            "that stopped: {} (resume with the settings it ran with)",
            SimCheckpointPath(dir, ck.rounds_done), diff));
      *resumed = std::move(*st);
      return Status::Ok();
    };
  }
  if (config.run.eval_every > 0 && s->spec_) {
    if (!data.test)
      return Status::InvalidArgument(
          "server-side evaluation (eval.every) needs a test set: set data.test, or eval.every = 0");
    TRIB_ASSIGN_OR_RETURN(
        s->evaluator_,
        ModelEvaluator::Create(*s->spec_, data.test, static_cast<int>(config.run.eval_batch_size),
                               s->pool_.get()));
    options.evaluator = MakeRanksEvaluator(s.get());
  }
  RunConfig run = config.EffectiveRun();
  run.final_model = final_model;
  TRIB_ASSIGN_OR_RETURN(s->driver_, RunDriver::Create(run, std::move(options)));
  if (*resumed) TRIB_RETURN_IF_ERROR(s->Restore(std::move(**resumed)));

  // A split run's virtual clients train the device part (and compute only its share).
  const SplitServer* split = s->driver_->split_server();
  std::optional<ModelSpec> trained = s->spec_;
  const SplitModel* u_shaped = nullptr;  // the cut whose head the devices hold too
  if (split) {
    trained = split->split().device;
    if (split->split().u_shaped()) u_shaped = &split->split();
    const SplitFlops f = SplitTrainFlopsPerSample(split->split());
    s->device_share_ = f.device + f.server > 0 ? static_cast<double>(f.device) /
                                                     static_cast<double>(f.device + f.server)
                                               : 1.0;
    if (config.trainer != "native" || trainers)
      return Status::InvalidArgument(
          "key 'split.mode' needs the native trainer (sim.trainer = 'native'): it trains the "
          "device "
          "part of the cut model");
  }
  if (trainers) {
    // Not built from the run's model: its first trainer's tensors are checked against it.
    s->trainers_ = std::make_unique<LayoutCheckedFactory>(std::move(trainers),
                                                          LayoutOf(s->driver_->client_model()));
  } else {
    // The model a virtual client trains (the whole model when only its unfrozen tensors travel).
    const ModelWeights initial = s->driver_->client_model();
    TRIB_ASSIGN_OR_RETURN(
        s->trainers_, MakeTrainerFactory(config.trainer, {trained ? &*trained : nullptr, &initial,
                                                          config.run.init_seed, u_shaped}));
  }
  if (s->driver_->engine().strategy().uses_control_variates() &&
      !s->trainers_->applies_correction())
    return Status::InvalidArgument(
        "key 'run.strategy' = '" + config.run.strategy +
        "' needs trainers that apply SCAFFOLD's drift correction, which these do not (sim.trainer "
        "= '" +
        config.trainer + "', or a trainer of the embedding program's); the native trainer does");
  TRIB_ASSIGN_OR_RETURN(s->attack_, MakeAttack(config.attack));
  if (s->attack_ && s->driver_->frozen())
    return Status::InvalidArgument(
        "key 'attack.kind' cannot be used with run.federate = 'unfrozen' in this version: the "
        "attacks craft whole-model updates, and such a run's updates hold the unfrozen tensors "
        "alone");
  if (s->attack_ && s->attack_->changes_data() && !s->trainers_->needs_data())
    return Status::InvalidArgument("key 'attack.kind' = '" + config.attack.kind +
                                   "' changes the clients' data, which sim.trainer = '" +
                                   config.trainer + "' does not use");
  if (config.run.round.secagg.enabled) {
    TRIB_ASSIGN_OR_RETURN(s->identities_, SimIdentities::Create());
  }
  if (config.tier.aggregators > 0) {
    const RunEngine& engine = s->driver_->engine();
    TRIB_ASSIGN_OR_RETURN(s->tier_, SimTier::Create(config.tier, config.EffectiveRun(),
                                                    engine.strategy(), engine.model()));
  }
  s->driver_->AddObserver(s.get());
  s->caps_.device = "sim";
  s->caps_.codecs = {config.run.round.codec};
  return s;
}

Status Simulator::Join() {
  if (joined_) return Status::Ok();
  driver_->Start();  // RunStarted before the first round opens (it opens as clients join)
  const double t = WallNow();
  // A population of millions takes seconds to register: past one, say how far it got.
  Progress progress("registering the simulated clients", population_->size(), "clients");
  for (uint64_t i = 0; i < population_->size(); ++i) {
    caps_.num_examples = population_->num_examples(i);
    driver_->engine().OnJoined(Population::ClientId(i), caps_, At(now_), Via(i));
    progress.Advance();
  }
  progress.Done();
  result_.join_seconds = WallNow() - t;
  joined_ = true;
  return Status::Ok();
}

void Simulator::OnEvent(const RunEvent& event) {
  if (const auto* closed = std::get_if<RoundClosed>(&event)) {
    if (round_closed_) {
      // A second step closed before the loop recorded the first (an asynchronous tick can end
      // two secure cohorts, each completing a buffer): the first is recorded now, with the
      // extras counted so far; the second starts from none.
      RecordRound();
      pending_ = SimRound{};
      round_start_sim_ = now_;
      round_start_wall_ = SimWallNow();
    }
    // The engine's counts and the evaluation; the in-process extras were counted in pending_.
    SimRound r = SimRoundOf(*closed);
    r.unavailable = pending_.unavailable;
    r.dropouts = pending_.dropouts;
    r.stragglers = pending_.stragglers;
    r.bytes_up = pending_.bytes_up;
    r.bytes_down = pending_.bytes_down;
    r.malicious = pending_.malicious;
    r.secagg_bytes_up = pending_.secagg_bytes_up;
    r.secagg_bytes_down = pending_.secagg_bytes_down;
    r.secagg_clients = pending_.secagg_clients;
    r.secagg_client_seconds = pending_.secagg_client_seconds;
    r.secagg_server_seconds = pending_.secagg_server_seconds;
    r.coordinator_update_seconds = pending_.coordinator_update_seconds;
    r.tier = pending_.tier;
    r.tier_bytes_up = pending_.tier_bytes_up;
    r.tier_bytes_down = pending_.tier_bytes_down;
    r.aggregator_seconds = pending_.aggregator_seconds;
    r.split_batches = pending_.split_batches;
    r.split_bytes_up = pending_.split_bytes_up;
    r.split_bytes_down = pending_.split_bytes_down;
    r.sim_clock = now_;
    r.sim_seconds = now_ - round_start_sim_;
    pending_ = r;
    round_closed_ = true;
  } else if (const auto* written = std::get_if<CheckpointWritten>(&event)) {
    if (written->error.empty()) state_due_ = written->round;
  } else if (const auto* failed = std::get_if<RoundFailed>(&event)) {
    Log().info("round {} attempt {} failed: {}", failed->round, failed->attempt, failed->reason);
    attempt_failed_ = true;
  }
}

double Simulator::Samples(uint64_t client, const TaskAssignment& task) const {
  double samples = static_cast<double>(population_->num_examples(client)) * task.fit.epochs;
  if (task.fit.max_steps > 0)
    samples = std::min(samples, static_cast<double>(task.fit.max_steps) * task.fit.batch_size);
  // A split run's device computes only its part: hetero.samples_per_s is the whole model's speed.
  return samples * device_share_;
}

void Simulator::RunJob(Job& job, uint64_t bytes_down) const {
  const auto& task = std::get<TaskAssignment>(job.out->message);
  const uint64_t c = job.index;
  const double samples = Samples(c, task);
  job.timing = TimeJob(job, bytes_down, 0, samples);
  if (!job.timing.available || job.timing.drops) return;  // never trains to the end

  Result<std::shared_ptr<Trainer>> trainer = MakeTrainer(c, Malicious(c));
  if (!trainer.ok()) {
    job.error = trainer.status().WithContext(job.out->client_id);
    return;
  }
  TaskExecutor executor(std::move(*trainer));
  // A partly federated run (run.federate = "unfrozen"): a virtual client holds the run's frozen
  // tensors from its first task on, as a real client keeps them; its executor lives for one task.
  if (const FrozenPart* frozen = driver_->frozen())
    executor.keep_frozen(frozen->hash, frozen->values);
  std::optional<CodecState> st = job.remote ? std::move(job.state) : residuals_->Get(c, task.round);
  job.state.reset();
  if (st) executor.set_codec_state(std::move(*st));
  const bool scaffold = !task.control.empty();
  if (scaffold) executor.set_control(job.remote ? std::move(job.control) : controls_->Get(c));
  std::optional<SimSplitExchange> split;
  if (SplitServer* server = driver_->split_server()) {
    Result<SplitTaskChannel> channel =
        SplitTaskChannel::Create(task, driver_->engine().model().fingerprint());
    if (!channel.ok()) {
      job.error = channel.status().WithContext(job.out->client_id);
      return;
    }
    split.emplace(*server, job.out->client_id, std::move(*channel), c + 1, &job.split_batches,
                  &job.split_bytes_up, &job.split_bytes_down);
  }
  Result<UpdateSubmission> sub = executor.Fit(task, nullptr, split ? &*split : nullptr);
  if (!executor.codec_state().residual.empty()) {
    if (job.remote)
      job.state = executor.take_codec_state();
    else
      residuals_->Put(c, task.round, executor.take_codec_state());
  }
  if (scaffold && sub.ok()) {  // c_i moves only with an update that was made
    if (job.remote)
      job.control = executor.take_control();
    else
      controls_->Put(c, executor.take_control());
  }
  if (!sub.ok()) {
    job.error = sub.status().WithContext(job.out->client_id);
    return;
  }
  if (job.secagg && !job.remote) {
    MaskJob(job, std::move(*sub), bytes_down);
    return;
  }
  if (job.remote) {
    // For rank 0, whose decoder receives it (simulator_ranks.cc).
    Result<std::vector<uint8_t>> wire = ToWire(Message(std::move(*sub)), c + 1, &job.bytes_up);
    if (!wire.ok()) {
      job.error = wire.status().WithContext(job.out->client_id);
      return;
    }
    job.wire = std::move(*wire);
    return;
  }
  // Through the wire format: framed as the transport would, decoded by the coordinator's
  // hostile-input decoder (the update's bytes then point into the reassembled body).
  Result<Message> got = ThroughWire(Message(std::move(*sub)), c + 1, &job.bytes_up);
  if (!got.ok()) {
    job.error = got.status().WithContext(job.out->client_id);
    return;
  }
  job.submission = std::get<UpdateSubmission>(std::move(*got));
  job.timing = TimeJob(job, bytes_down, job.bytes_up, samples);
  if (job.split_batches > 0)
    devices_->AddSplitExchange(c, job.split_batches * SplitRoundTrips(), job.split_bytes_up,
                               job.split_bytes_down, &job.timing);
}

void Simulator::MaskJob(Job& job, UpdateSubmission sub, uint64_t bytes_down) const {
  // Secure aggregation: the update goes into the integer domain, masked, and that travels.
  const auto& task = std::get<TaskAssignment>(job.out->message);
  const double t = WallNow();
  bool no_inbox = false;
  Result<SecAggMaskedInputMsg> masked = [&]() -> Result<SecAggMaskedInputMsg> {
    TRIB_RETURN_IF_ERROR(job.secagg->SetUpdate(sub, task.fit.seed));
    no_inbox = !job.secagg->TryClaimMask();
    if (no_inbox)
      return Status::Internal("secure aggregation: no inbox of shares before the masking");
    return job.secagg->Mask();
  }();
  job.secagg_seconds = WallNow() - t;
  if (no_inbox && job.task) {
    // An asynchronous cohort's key phases are served when it is dispatched: no inbox means its
    // session ended before the masking (too few members). The client sends nothing.
    job.abandoned = true;
    return;
  }
  job.bytes_up = 0;
  Result<Message> wire =
      masked.ok() ? ThroughWire(Message(std::move(*masked)), job.index + 1, &job.bytes_up)
                  : Result<Message>(masked.status());
  if (!wire.ok()) {
    job.error = wire.status().WithContext(job.out->client_id);
    return;
  }
  job.masked = std::move(*wire);
  job.timing = TimeJob(job, bytes_down, job.bytes_up, Samples(job.index, task));
}

TaskTiming Simulator::TimeJob(const Job& job, uint64_t bytes_down, uint64_t bytes_up,
                              double samples) const {
  if (job.task) return devices_->TimeTask(job.index, *job.task, bytes_down, bytes_up, samples);
  const auto& task = std::get<TaskAssignment>(job.out->message);
  return devices_->Time(job.index, task.round, attempt_, bytes_down, bytes_up, samples);
}

bool Simulator::Malicious(uint64_t client) const {
  return attack_ && IsMaliciousClient(config_.run.round.seed, client, config_.attack.fraction);
}

Result<std::shared_ptr<Trainer>> Simulator::MakeTrainer(uint64_t client, bool attacked) const {
  const auto n = static_cast<int64_t>(population_->num_examples(client));
  std::shared_ptr<const Dataset> local;
  if (trainers_->needs_data()) {
    Dataset examples = population_->Materialize(client);
    if (attacked) attack_->WrapData(examples);
    local = std::make_shared<const Dataset>(std::move(examples));
  }
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<Trainer> trainer, trainers_->Make(std::move(local), n));
  if (attacked) trainer = attack_->WrapTrainer(std::move(trainer), client, n);
  return trainer;
}

Status Simulator::PrepareAttack(const std::vector<RunEngine::Outgoing>& tasks) {
  pending_.malicious = 0;
  if (!attack_) return Status::Ok();
  Attack::Attempt attempt;
  attempt.selected = static_cast<int64_t>(tasks.size());
  std::map<uint64_t, const TaskAssignment*> task_of;
  for (const RunEngine::Outgoing& t : tasks) {
    std::optional<uint64_t> c = Population::IndexOf(t.client_id);
    if (c && *c < population_->size() && Malicious(*c)) {
      attempt.malicious.push_back(*c);  // in selection order
      task_of[*c] = &std::get<TaskAssignment>(t.message);
    }
  }
  pending_.malicious = static_cast<int64_t>(attempt.malicious.size());
  // An attacker's honest update: the client's own trainer (same data, decoded model and fit seed
  // as its real fit) through the client's TaskExecutor.
  auto fit_honestly = [this, &task_of](uint64_t client) -> Result<Attack::HonestFit> {
    TRIB_ASSIGN_OR_RETURN(std::shared_ptr<Trainer> honest, MakeTrainer(client, false));
    auto recorder = std::make_shared<RecordingTrainer>(std::move(honest));
    TaskExecutor executor(recorder);
    const TaskAssignment& task = *task_of.at(client);
    // Under SCAFFOLD, with the client's own c_i (the real fit moves it; this one does not).
    if (!task.control.empty()) executor.set_control(controls_->Get(client));
    TRIB_RETURN_IF_ERROR(executor.Fit(task).status());
    return Attack::HonestFit{std::move(recorder->delta()), recorder->metrics()};
  };
  return attack_->Prepare(attempt, *pool_, fit_honestly);
}

Status Simulator::RunAttempt(std::vector<RunEngine::Outgoing> tasks,
                             std::map<std::string, SecAggStartMsg> starts) {
  const uint64_t round = std::get<TaskAssignment>(tasks[0].message).round;
  if (round != attempt_round_) {
    attempt_round_ = round;
    attempt_ = 0;
    pending_ = SimRound{};
    round_start_sim_ = now_;
    round_start_wall_ = WallNow();
  } else {
    ++attempt_;
  }
  round_closed_ = false;
  attempt_failed_ = false;
  residuals_->Expire(round);
  TRIB_RETURN_IF_ERROR(PrepareAttack(tasks));
  const double t0 = now_;
  // Every client's task is the same size but for the frozen tensors a first task brings.
  TRIB_ASSIGN_OR_RETURN(const uint64_t bytes_down, FramedBytesWithoutFrozen(tasks[0].message));

  std::vector<Job> jobs(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::optional<uint64_t> index = Population::IndexOf(tasks[i].client_id);
    if (!index || *index >= population_->size())
      return Status::Internal("the engine assigned unknown client '" + tasks[i].client_id + "'");
    jobs[i].index = *index;
    jobs[i].out = &tasks[i];
  }
  RunEngine& engine = driver_->engine();
  auto open = [&] { return !round_closed_ && !attempt_failed_; };
  std::vector<std::string> departed;
  secagg_.clear();
  if (config_.run.round.secagg.enabled)
    TRIB_RETURN_IF_ERROR(StartSecAgg(jobs, starts, bytes_down, departed));

  std::vector<Job*> train;
  if (open())
    for (Job& job : jobs)
      if (!job.left_early) train.push_back(&job);
  std::vector<uint64_t> train_down;
  for (const Job* job : train)
    train_down.push_back(bytes_down + FrozenValueBytes(job->out->message));
  TRIB_RETURN_IF_ERROR(TrainJobs(train, train_down));

  // Through a simulated tier the tasks reach the aggregators `hop` seconds after t0, and the
  // clients' tasks start then.
  double hop = 0.0;
  if (tier_ && open() && !train.empty()) {
    Result<double> h = tier_->Begin(tasks, t0);
    NoteTier();
    if (!h.ok()) return h.status();
    hop = *h;
  }
  // Events in simulated-time order (ties: clients' first, then aggregators' flush times, then
  // group results reaching the coordinator; then by index), independent of thread scheduling.
  enum Kind { kClient = 0, kFlush = 1, kResult = 2 };
  struct Event {
    double t;
    int kind;
    uint64_t index;  // the client's; the aggregator's (kFlush); the result's in `sent` (kResult)
    Job* job;
    bool leaves;
  };
  auto later = [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t > b.t;
    if (a.kind != b.kind) return a.kind > b.kind;
    return a.index > b.index;
  };
  std::priority_queue<Event, std::vector<Event>, decltype(later)> events(later);
  for (Job& j : jobs) {
    TRIB_RETURN_IF_ERROR(j.error);
    if (j.left_early) {
      ++pending_.unavailable;  // and told to the engine already
      continue;
    }
    if (train.empty()) continue;  // the attempt failed before the clients trained
    if (!j.timing.available) {
      ++pending_.unavailable;
      events.push({t0 + hop, kClient, j.index, &j, true});
      continue;
    }
    pending_.bytes_down += bytes_down + FrozenValueBytes(j.out->message);
    pending_.secagg_client_seconds += j.secagg_seconds;
    if (j.timing.drops) {
      ++pending_.dropouts;
      events.push({t0 + hop + j.timing.drop_at_s, kClient, j.index, &j, true});
    } else {
      events.push({t0 + hop + j.timing.finish_s(), kClient, j.index, &j, false});
    }
  }
  std::vector<SimTier::Sent> sent;  // group results on their way to the coordinator
  if (tier_ && !train.empty())
    for (int64_t k = 0; k < tier_->size(); ++k)
      if (std::optional<double> at = tier_->FlushAt(k))
        events.push({*at, kFlush, static_cast<uint64_t>(k), nullptr, false});
  // The aggregator's group result leaves when it is due (every member answered or left, or its
  // flush time passed).
  auto send_if_due = [&](int64_t k, double t) -> Status {
    Result<std::optional<SimTier::Sent>> due = tier_->TakeIfDue(k, t);
    NoteTier();
    if (!due.ok()) return due.status();
    if (!*due) return Status::Ok();
    sent.push_back(std::move(**due));
    events.push({sent.back().arrives, kResult, sent.size() - 1, nullptr, false});
    return Status::Ok();
  };
  const double deadline =
      t0 + std::chrono::duration<double>(config_.run.round.round_timeout).count();
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    if (open() && e.t > deadline) {
      now_ = deadline;
      engine.OnTick(At(deadline));
      TRIB_RETURN_IF_ERROR(ServeSecAgg());
    }
    if (e.kind == kFlush) {
      if (open()) TRIB_RETURN_IF_ERROR(send_if_due(static_cast<int64_t>(e.index), e.t));
      continue;
    }
    if (e.kind == kResult) {
      if (!open()) continue;  // after the attempt ended: the coordinator refuses it as late
      now_ = e.t;
      SimTier::Sent& g = sent[e.index];
      const double wall = WallNow();
      Result<PartialSum> partial = DecodePartialSum(g.result.partial.span(), engine.model().size());
      Status s = partial.ok()
                     ? engine.OnGroupResult(tier_->Name(g.aggregator), g.result, *partial, At(e.t))
                     : partial.status();
      pending_.coordinator_update_seconds += WallNow() - wall;
      if (!s.ok())
        Log().warn("the partial sum of {} refused: {}", tier_->Name(g.aggregator), s.ToString());
      g.result = GroupResult{};  // its partial sum is merged: the bytes go
      continue;
    }
    const std::string& id = e.job->out->client_id;
    if (e.leaves) {
      if (!open()) continue;  // leaving after the attempt ended changes nothing
      now_ = e.t;
      engine.OnLeft(id, At(e.t));
      departed.push_back(id);
      secagg_.erase(id);
      TRIB_RETURN_IF_ERROR(ServeSecAgg());
      if (tier_) {
        tier_->OnLeft(tier_->Of(e.index), id);
        TRIB_RETURN_IF_ERROR(send_if_due(tier_->Of(e.index), e.t));
      }
      continue;
    }
    pending_.bytes_up += e.job->bytes_up + e.job->split_bytes_up;
    pending_.bytes_down += e.job->split_bytes_down;
    pending_.split_batches += e.job->split_batches;
    pending_.split_bytes_up += e.job->split_bytes_up;
    pending_.split_bytes_down += e.job->split_bytes_down;
    if (!open()) {
      ++pending_.stragglers;  // sent, but the round had closed or passed its deadline
      continue;
    }
    now_ = e.t;
    if (tier_) {  // to the client's aggregator
      const int64_t k = tier_->Of(e.index);
      std::optional<UpdateRefusal> no =
          tier_->OnUpdate(k, id, *e.job->submission, engine.registry().Find(id), e.t);
      if (no) Log().debug("update from {} refused by {}: {}", id, tier_->Name(k), no->reason);
      TRIB_RETURN_IF_ERROR(send_if_due(k, e.t));
      continue;
    }
    Status s;
    const double wall = WallNow();
    if (e.job->masked) {
      s = engine.OnSecAgg(id, *e.job->masked, At(e.t));
      pending_.secagg_server_seconds += WallNow() - wall;
      TRIB_RETURN_IF_ERROR(ServeSecAgg());
    } else {
      s = engine.OnUpdate(id, *e.job->submission, At(e.t));
      pending_.coordinator_update_seconds += WallNow() - wall;
    }
    if (!s.ok()) Log().debug("update from {} refused: {}", id, s.ToString());
  }
  if (open()) {
    now_ = std::max(now_, deadline);
    engine.OnTick(At(deadline));
    TRIB_RETURN_IF_ERROR(ServeSecAgg());
  }
  // Secure aggregation's last phase may still wait (for unmasking answers that will not come).
  for (int pass = 0; open() && pass < 8; ++pass) {
    std::optional<TimePoint> wake = engine.next_wakeup();
    if (!wake) break;
    now_ = std::max(now_, SimSeconds(*wake));
    engine.OnTick(At(now_));
    TRIB_RETURN_IF_ERROR(ServeSecAgg());
  }
  secagg_.clear();
  // Clients that left come back once the attempt is over (the next attempt can select them).
  for (const std::string& id : departed) {
    const uint64_t index = *Population::IndexOf(id);
    caps_.num_examples = population_->num_examples(index);
    engine.OnJoined(id, caps_, At(now_), Via(index));
  }
  if (round_closed_) RecordRound();
  SaveState();
  return Status::Ok();
}

Status Simulator::Restore(SimCheckpoint state) {
  const uint64_t done = driver_->engine().rounds_done();
  if (state.rounds_done != done)
    return Status::Internal(fmt::format("simulator state of round {} for a checkpoint of round {}",
                                        state.rounds_done, done));
  TRIB_RETURN_IF_ERROR(
      residuals_->Restore(std::move(state.residuals), driver_->engine().model().size()));
  TRIB_RETURN_IF_ERROR(
      controls_->Restore(std::move(state.controls), driver_->engine().model().size()));
  driver_->engine().mutable_registry().RestoreCooldowns(std::move(state.cooldowns));
  now_ = state.sim_clock;
  wall_before_ = state.rounds.empty() ? 0.0 : state.rounds.back().wall_clock;
  for (SimRound& r : state.rounds) result_.Append(std::move(r), config_.target_accuracy);
  state_kept_ = std::move(state.kept);
  state_kept_.push_back(done);
  Log().info(
      "resume: the simulation goes on from round {} at simulated time {:.1f} s ({} clients "
      "cooling down, {} error-feedback residuals)",
      done, now_, driver_->engine().registry().cooldowns().size(), residuals_->size());
  return Status::Ok();
}

void Simulator::SaveState() {
  if (!state_due_) return;
  SimCheckpoint st;
  st.run_uid = driver_->run_uid();
  st.settings = ResumeSettings(config_);
  st.rounds_done = *state_due_;
  state_due_.reset();
  st.sim_clock = now_;
  st.cooldowns = driver_->engine().registry().cooldowns();
  st.residuals = residuals_->Snapshot();
  st.controls = controls_->Snapshot();
  st.rounds = result_.rounds;
  st.kept = state_kept_;
  const RunConfig& run = driver_->config();
  const Status saved = SaveSimCheckpoint(driver_->env(), run.checkpoint_dir, st,
                                         static_cast<int>(run.keep_checkpoints));
  if (saved.ok())
    state_kept_ = std::move(st.kept);
  else  // as with the checkpoint itself, the run goes on; a resume falls back to an older round
    Log().error("the simulator's state after round {} was not saved: {}", st.rounds_done,
                saved.ToString());
}

bool Simulator::AtTarget() const { return config_.stop_at_target && result_.target_round > 0; }

bool Simulator::StopRequested() {
  if (!stop_flag_ || !stop_flag_->load(std::memory_order_relaxed)) return false;
  if (!stop_logged_) {
    stop_logged_ = true;
    Log().warn("simulator: stop requested; stopping after {} rounds",
               driver_->engine().rounds_done());
  }
  return true;
}

void Simulator::RecordRound() {
  SimRound r = pending_;
  r.wall_seconds = WallNow() - round_start_wall_;
  r.wall_clock = wall_before_ + (WallNow() - wall_start_);
  const SimRound& stored = result_.Append(std::move(r), config_.target_accuracy);
  if (on_round_ && *on_round_) (*on_round_)(stored);
}

Status Simulator::StartSecAgg(std::vector<Job>& jobs,
                              const std::map<std::string, SecAggStartMsg>& starts,
                              uint64_t bytes_down, std::vector<std::string>& departed) {
  RunEngine& engine = driver_->engine();
  // Unreachable clients never hear of the round: the engine learns it before the key phases.
  for (Job& job : jobs) {
    const auto& task = std::get<TaskAssignment>(job.out->message);
    const TaskTiming timing = devices_->Time(job.index, task.round, attempt_,
                                             bytes_down + FrozenValueBytes(job.out->message), 0,
                                             Samples(job.index, task));
    if (timing.available) continue;
    job.left_early = true;
    engine.OnLeft(job.out->client_id, At(now_));
    departed.push_back(job.out->client_id);
  }
  // Everyone else advertises its keys; the engine's rosters and inboxes are served at once (the
  // key phases take no simulated time: a few kB each way).
  for (Job& job : jobs) {
    if (job.left_early || round_closed_ || attempt_failed_) continue;
    auto start = starts.find(job.out->client_id);
    if (start == starts.end())
      return Status::Internal("the engine sent " + job.out->client_id +
                              " a task without a SecAggStart");
    TRIB_RETURN_IF_ERROR(JoinSecAgg(job, start->second));
  }
  return ServeSecAgg();
}

Status Simulator::JoinSecAgg(Job& job, const SecAggStartMsg& start) {
  const std::string& id = job.out->client_id;
  uint64_t bytes = 0;
  TRIB_ASSIGN_OR_RETURN(Message got, ThroughWire(Message(start), job.index + 1, &bytes));
  pending_.secagg_bytes_down += bytes;
  pending_.bytes_down += bytes;
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<const SecAggIdentity> identity, identities_->For(id));
  const double t = WallNow();
  Result<std::shared_ptr<SecAggTask>> created =
      SecAggTask::Create(std::get<SecAggStartMsg>(got), id, identity);
  if (!created.ok()) return created.status().WithContext(id);
  Result<SecAggKeysMsg> keys = (*created)->Advertise();
  if (!keys.ok()) return keys.status().WithContext(id);
  pending_.secagg_client_seconds += WallNow() - t;
  ++pending_.secagg_clients;
  job.secagg = *created;
  secagg_[id] = *created;
  return Answer(id, Message(std::move(*keys)), job.index);
}

Status Simulator::Answer(const std::string& id, Message reply, uint64_t index) {
  uint64_t bytes = 0;
  TRIB_ASSIGN_OR_RETURN(Message got, ThroughWire(reply, index + 1, &bytes));
  pending_.secagg_bytes_up += bytes;
  pending_.bytes_up += bytes;
  const double t = WallNow();
  Status s = driver_->engine().OnSecAgg(id, got, At(now_));
  pending_.secagg_server_seconds += WallNow() - t;
  if (!s.ok())
    Log().warn("secure aggregation: the engine refused {}'s message: {}", id, s.message());
  return Status::Ok();
}

Status Simulator::ServeSecAgg() {
  if (!config_.run.round.secagg.enabled) return Status::Ok();
  RunEngine& engine = driver_->engine();
  // Each pass serves one phase's messages; the answers may open the next one.
  for (int pass = 0; pass < 16; ++pass) {
    std::vector<RunEngine::Outgoing> out = engine.TakeOutbox();
    if (out.empty()) return Status::Ok();
    for (RunEngine::Outgoing& o : out) {
      // After the attempt ends the engine's messages are the next attempt's: Run's.
      if (round_closed_ || attempt_failed_ || std::holds_alternative<TaskAssignment>(o.message) ||
          std::holds_alternative<SecAggStartMsg>(o.message)) {
        carry_.push_back(std::move(o));
        continue;
      }
      TRIB_RETURN_IF_ERROR(ReplySecAgg(o));
    }
  }
  return Status::Internal("simulator: secure aggregation's phases did not settle");
}

Status Simulator::ReplySecAgg(const RunEngine::Outgoing& o) {
  auto it = secagg_.find(o.client_id);
  if (it == secagg_.end()) return Status::Ok();  // to a client that left, or a refusal's Error
  const uint64_t index = *Population::IndexOf(o.client_id);
  uint64_t bytes = 0;
  TRIB_ASSIGN_OR_RETURN(Message got, ThroughWire(o.message, index + 1, &bytes));
  pending_.secagg_bytes_down += bytes;
  pending_.bytes_down += bytes;
  SecAggTask& task = *it->second;
  const double t = WallNow();
  std::optional<Result<Message>> reply;
  if (auto* roster = std::get_if<SecAggRosterMsg>(&got)) {
    Result<SecAggSharesMsg> r = task.Share(*roster);
    reply = r.ok() ? Result<Message>(Message(std::move(*r))) : Result<Message>(r.status());
  } else if (auto* inbox = std::get_if<SecAggInboxMsg>(&got)) {
    task.SetInbox(std::move(*inbox));
  } else if (auto* request = std::get_if<SecAggUnmaskRequestMsg>(&got)) {
    Result<SecAggUnmaskResponseMsg> r = task.Unmask(*request);
    reply = r.ok() ? Result<Message>(Message(std::move(*r))) : Result<Message>(r.status());
  } else if (auto* error = std::get_if<Error>(&got)) {
    return Status::Internal("the engine refused " + o.client_id + ": " + error->message);
  }
  pending_.secagg_client_seconds += WallNow() - t;
  if (!reply) return Status::Ok();
  if (!reply->ok()) return reply->status().WithContext(o.client_id);
  return Answer(o.client_id, std::move(**reply), index);
}

Result<SimResult> Simulator::Run(const std::function<void(const SimRound&)>& on_round) {
  if (ranks_ && ranks_->rank() != 0)
    return Status::FailedPrecondition("simulator: rank " + std::to_string(ranks_->rank()) +
                                      " serves rank 0 (Serve), it does not run");
  // Failing before the first round, the other ranks are told to stop at once (not only when this
  // simulator is destroyed): their callers may wait for them first.
  Status ready = GreetRanks();
  if (ready.ok()) ready = Join();
  if (!ready.ok()) {
    StopRanks();
    return ready;
  }
  on_round_ = &on_round;
  wall_start_ = WallNow();
  RunEngine& engine = driver_->engine();
  Status outcome;
  if (config_.run.round.asynchronous()) outcome = RunAsync();
  while (!engine.finished() && outcome.ok() && !AtTarget() && !StopRequested()) {
    std::vector<RunEngine::Outgoing> outbox = std::move(carry_), more = engine.TakeOutbox();
    carry_.clear();
    outbox.insert(outbox.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
    driver_->NoteTasks(outbox);  // a split run's server part learns whose batches to take
    std::vector<RunEngine::Outgoing> tasks;
    std::map<std::string, SecAggStartMsg> starts;
    for (RunEngine::Outgoing& o : outbox) {
      if (std::holds_alternative<TaskAssignment>(o.message))
        tasks.push_back(std::move(o));
      else if (auto* start = std::get_if<SecAggStartMsg>(&o.message))
        starts[o.client_id] = std::move(*start);
    }
    if (tasks.empty()) {
      outcome = Status::Internal("simulator: the engine started no round (" +
                                 std::to_string(engine.registry().num_idle()) + " of " +
                                 std::to_string(engine.registry().size()) + " clients idle)");
      break;
    }
    outcome = RunAttempt(std::move(tasks), std::move(starts));
  }
  on_round_ = nullptr;
  // Stopped on request: the run is finished as stopped (the history's "stopped", its checkpoints
  // kept for --resume), and the caller hears it.
  const bool stopped = outcome.ok() && !engine.finished() && !AtTarget() && StopRequested();
  StopRanks();
  if (ranks_ && result_.rank_exchanges > 0)
    Log().info(
        "distributed simulation: {} exchanges with the {} ranks took {:.2f} s of compute (the "
        "busiest rank's) and {:.2f} s more on the link; the ranks waited {:.1f}% of the compute "
        "for the busiest",
        result_.rank_exchanges, ranks_->size(), result_.rank_compute_seconds,
        result_.rank_link_seconds,
        result_.rank_compute_seconds > 0
            ? 100.0 * result_.rank_idle_seconds /
                  (result_.rank_compute_seconds * static_cast<double>(ranks_->size()))
            : 0.0);
  if (outcome.ok()) outcome = engine.failure();
  TRIB_RETURN_IF_ERROR(driver_->Finish(outcome));
  if (stopped)
    return Status::Aborted(fmt::format("simulator: stopped on request after {} of {} rounds",
                                       engine.rounds_done(), config_.run.round.rounds));
  result_.stopped = engine.stop_reason();
  if (AtTarget() && !engine.finished())
    result_.stopped = fmt::format("sim.stop_at_target: round {} reached test accuracy {}",
                                  result_.target_round, config_.target_accuracy);
  result_.wall_seconds = wall_before_ + (WallNow() - wall_start_);
  result_.sim_seconds = now_;
  result_.final_model = driver_->model();  // the whole model, in a split run too
  result_.model_hash = result_.final_model.content_hash();
  return result_;
}

}  // namespace tributary
