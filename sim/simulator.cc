#include "sim/simulator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>

#include "client/task_executor.h"
#include "protocol/frame.h"
#include "protocol/message_codec.h"
#include "train/model_file.h"

namespace tributary {
namespace {

double WallNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t FramedBytes(const OutboundMessage& m) {
  uint64_t n = 0;
  for (const auto& f : m.frames) n += f.header_length + f.body_length;
  return n;
}

}  // namespace

// One selected client's task in an attempt, filled in on a pool thread.
struct Simulator::Job {
  uint64_t index = 0;
  const RoundEngine::Outgoing* out = nullptr;
  TaskTiming timing;
  uint64_t bytes_up = 0;
  std::optional<UpdateSubmission> submission;
  Status error;
};

Simulator::~Simulator() = default;

TimePoint Simulator::At(double seconds) const {
  return TimePoint{} +
         std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(seconds));
}

Result<std::unique_ptr<Simulator>> Simulator::Create(const SimConfig& config, DataSplits data,
                                                     const std::string& final_model, Env* env,
                                                     std::unique_ptr<TrainerFactory> trainers) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  if (config.run.round.secagg.enabled)
    return Status::Unimplemented(
        "key 'secagg.enabled': the in-process simulator's virtual clients do not take part in "
        "secure aggregation yet; run it with --deploy (real coordinator and client processes)");
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

  RunDriver::Options options;
  options.model_spec = s->spec_;
  options.env = env;
  options.producer = "tributary-sim";
  if (config.run.eval_every > 0 && s->spec_) {
    if (!data.test)
      return Status::InvalidArgument(
          "server-side evaluation (eval.every) needs a test set: set data.test, or eval.every = 0");
    TRIB_ASSIGN_OR_RETURN(
        options.evaluator,
        ModelEvaluator::Create(*s->spec_, data.test, static_cast<int>(config.run.eval_batch_size),
                               s->pool_.get()));
  }
  RunConfig run = config.EffectiveRun();
  run.final_model = final_model;
  TRIB_ASSIGN_OR_RETURN(s->driver_, RunDriver::Create(run, std::move(options)));

  if (trainers) {
    s->trainers_ = std::move(trainers);
  } else {
    const ModelWeights& initial = s->driver_->engine().model();
    TRIB_ASSIGN_OR_RETURN(
        s->trainers_, MakeTrainerFactory(config.trainer, {s->spec_ ? &*s->spec_ : nullptr, &initial,
                                                          config.run.init_seed}));
  }
  TRIB_ASSIGN_OR_RETURN(s->attack_, MakeAttack(config.attack));
  if (s->attack_ && s->attack_->changes_data() && !s->trainers_->needs_data())
    return Status::InvalidArgument("key 'attack.kind' = '" + config.attack.kind +
                                   "' changes the clients' data, which sim.trainer = '" +
                                   config.trainer + "' does not use");
  s->driver_->AddObserver(s.get());
  s->caps_.device = "sim";
  s->caps_.codecs = {config.run.round.codec};
  return s;
}

Status Simulator::Join() {
  if (joined_) return Status::Ok();
  driver_->Start();  // RunStarted before the first round opens (it opens as clients join)
  const double t = WallNow();
  for (uint64_t i = 0; i < population_->size(); ++i) {
    caps_.num_examples = population_->num_examples(i);
    driver_->engine().OnJoined(Population::ClientId(i), caps_, At(0.0));
  }
  result_.join_seconds = WallNow() - t;
  joined_ = true;
  return Status::Ok();
}

void Simulator::OnEvent(const RunEvent& event) {
  if (const auto* closed = std::get_if<RoundClosed>(&event)) {
    // The engine's counts and the evaluation; the in-process extras were counted in pending_.
    SimRound r = SimRoundOf(*closed);
    r.unavailable = pending_.unavailable;
    r.dropouts = pending_.dropouts;
    r.stragglers = pending_.stragglers;
    r.bytes_up = pending_.bytes_up;
    r.bytes_down = pending_.bytes_down;
    r.malicious = pending_.malicious;
    r.sim_clock = now_;
    r.sim_seconds = now_ - round_start_sim_;
    pending_ = r;
    round_closed_ = true;
  } else if (const auto* failed = std::get_if<RoundFailed>(&event)) {
    spdlog::info("round {} attempt {} failed: {}", failed->round, failed->attempt, failed->reason);
    attempt_failed_ = true;
  }
}

void Simulator::RunJob(Job& job, uint64_t bytes_down) const {
  const auto& task = std::get<TaskAssignment>(job.out->message);
  const uint64_t c = job.index;
  const uint64_t n = population_->num_examples(c);
  double samples = static_cast<double>(n) * task.fit.epochs;
  if (task.fit.max_steps > 0)
    samples = std::min(samples, static_cast<double>(task.fit.max_steps) * task.fit.batch_size);
  job.timing = devices_->Time(c, task.round, attempt_, bytes_down, 0, samples);
  if (!job.timing.available || job.timing.drops) return;  // never trains to the end

  Result<std::shared_ptr<Trainer>> trainer = MakeTrainer(c, Malicious(c));
  if (!trainer.ok()) {
    job.error = trainer.status().WithContext(job.out->client_id);
    return;
  }
  TaskExecutor executor(std::move(*trainer));
  if (std::optional<CodecState> st = residuals_->Get(c, task.round))
    executor.set_codec_state(std::move(*st));
  Result<UpdateSubmission> sub = executor.Fit(task);
  if (!executor.codec_state().residual.empty())
    residuals_->Put(c, task.round, executor.take_codec_state());
  if (!sub.ok()) {
    job.error = sub.status().WithContext(job.out->client_id);
    return;
  }
  // Through the wire format: frame it as the transport would, count the frames, decode the body
  // with the coordinator's hostile-input decoder.
  Result<OutboundMessage> wire = EncodeOutbound(Message(std::move(*sub)), ProtocolLimits{}, c + 1);
  if (!wire.ok()) {
    job.error = wire.status().WithContext(job.out->client_id);
    return;
  }
  job.bytes_up = FramedBytes(*wire);
  // The body as the coordinator reassembles it, handed to the decoder the way MessageReader does
  // (the update's bytes then point into it).
  auto body = std::make_shared<const std::vector<uint8_t>>(wire->BodyBytes());
  *wire = OutboundMessage{};
  Message got;
  const Status decoded =
      DecodeMessageBodySharing(MessageType::kUpdateSubmission, body, *body, &got);
  if (!decoded.ok()) {
    job.error = decoded.WithContext(job.out->client_id);
    return;
  }
  job.submission = std::get<UpdateSubmission>(std::move(got));
  job.timing = devices_->Time(c, task.round, attempt_, bytes_down, job.bytes_up, samples);
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

Status Simulator::PrepareAttack(const std::vector<RoundEngine::Outgoing>& tasks) {
  pending_.malicious = 0;
  if (!attack_) return Status::Ok();
  Attack::Attempt attempt;
  attempt.selected = static_cast<int64_t>(tasks.size());
  std::map<uint64_t, const TaskAssignment*> task_of;
  for (const RoundEngine::Outgoing& t : tasks) {
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
    TRIB_RETURN_IF_ERROR(executor.Fit(*task_of.at(client)).status());
    return Attack::HonestFit{std::move(recorder->delta()), recorder->metrics()};
  };
  return attack_->Prepare(attempt, *pool_, fit_honestly);
}

Status Simulator::RunAttempt(std::vector<RoundEngine::Outgoing> tasks) {
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
  TRIB_ASSIGN_OR_RETURN(OutboundMessage down,
                        EncodeOutbound(tasks[0].message, ProtocolLimits{}, 1));
  const uint64_t bytes_down = FramedBytes(down);
  down = OutboundMessage{};

  std::vector<Job> jobs(tasks.size());
  std::vector<std::future<void>> done;
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::optional<uint64_t> index = Population::IndexOf(tasks[i].client_id);
    if (!index || *index >= population_->size())
      return Status::Internal("the engine assigned unknown client '" + tasks[i].client_id + "'");
    jobs[i].index = *index;
    jobs[i].out = &tasks[i];
    done.push_back(pool_->Submit([this, &jobs, i, bytes_down] { RunJob(jobs[i], bytes_down); }));
  }
  for (auto& f : done) f.get();

  // Events in simulated-time order (ties by client index), independent of thread scheduling.
  struct Event {
    double t;
    uint64_t index;
    Job* job;
    bool leaves;
  };
  std::vector<Event> events;
  for (Job& j : jobs) {
    TRIB_RETURN_IF_ERROR(j.error);
    if (!j.timing.available) {
      ++pending_.unavailable;
      events.push_back({t0, j.index, &j, true});
      continue;
    }
    pending_.bytes_down += bytes_down;
    if (j.timing.drops) {
      ++pending_.dropouts;
      events.push_back({t0 + j.timing.drop_at_s, j.index, &j, true});
    } else {
      events.push_back({t0 + j.timing.finish_s(), j.index, &j, false});
    }
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.t != b.t ? a.t < b.t : a.index < b.index;
  });
  RoundEngine& engine = driver_->engine();
  const double deadline =
      t0 + std::chrono::duration<double>(config_.run.round.round_timeout).count();
  auto open = [&] { return !round_closed_ && !attempt_failed_; };
  std::vector<std::string> departed;
  for (const Event& e : events) {
    if (open() && e.t > deadline) {
      now_ = deadline;
      engine.OnTick(At(deadline));
    }
    if (e.leaves) {
      if (!open()) continue;  // leaving after the attempt ended changes nothing
      now_ = e.t;
      engine.OnLeft(e.job->out->client_id, At(e.t));
      departed.push_back(e.job->out->client_id);
      continue;
    }
    pending_.bytes_up += e.job->bytes_up;
    if (!open()) {
      ++pending_.stragglers;  // sent, but the round had closed or passed its deadline
      continue;
    }
    now_ = e.t;
    Status s = engine.OnUpdate(e.job->out->client_id, *e.job->submission, At(e.t));
    if (!s.ok()) spdlog::debug("update from {} rejected: {}", e.job->out->client_id, s.ToString());
  }
  if (open()) {
    now_ = std::max(now_, deadline);
    engine.OnTick(At(deadline));
  }
  // Clients that left come back once the attempt is over (the next attempt can select them).
  for (const std::string& id : departed) {
    caps_.num_examples = population_->num_examples(*Population::IndexOf(id));
    engine.OnJoined(id, caps_, At(now_));
  }
  if (round_closed_) {
    SimRound r = pending_;
    r.wall_seconds = WallNow() - round_start_wall_;
    r.wall_clock = WallNow() - wall_start_;
    const SimRound& stored = result_.Append(std::move(r), config_.target_accuracy);
    if (on_round_ && *on_round_) (*on_round_)(stored);
  }
  return Status::Ok();
}

Result<SimResult> Simulator::Run(const std::function<void(const SimRound&)>& on_round) {
  TRIB_RETURN_IF_ERROR(Join());
  on_round_ = &on_round;
  wall_start_ = WallNow();
  RoundEngine& engine = driver_->engine();
  Status outcome;
  while (!engine.finished() && outcome.ok()) {
    std::vector<RoundEngine::Outgoing> tasks;
    for (RoundEngine::Outgoing& o : engine.TakeOutbox())
      if (std::holds_alternative<TaskAssignment>(o.message)) tasks.push_back(std::move(o));
    if (tasks.empty()) {
      outcome = Status::Internal("simulator: the engine started no round (" +
                                 std::to_string(engine.registry().num_idle()) + " of " +
                                 std::to_string(engine.registry().size()) + " clients idle)");
      break;
    }
    outcome = RunAttempt(std::move(tasks));
  }
  on_round_ = nullptr;
  if (outcome.ok()) outcome = engine.failure();
  TRIB_RETURN_IF_ERROR(driver_->Finish(outcome));
  result_.wall_seconds = WallNow() - wall_start_;
  result_.sim_seconds = now_;
  result_.final_model = engine.model();
  result_.model_hash = engine.model().content_hash();
  return result_;
}

}  // namespace tributary
