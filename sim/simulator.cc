#include "sim/simulator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>

#include "aggregation/strategy_factory.h"
#include "client/task_executor.h"
#include "protocol/frame.h"
#include "protocol/message_codec.h"
#include "sim/attack.h"
#include "sim/noop_trainer.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

constexpr int kEvalSlices = 8;  // fixed, so evaluation sums do not depend on the thread count
constexpr int64_t kMaxAttempts = 50;

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

const SimRound& SimResult::Append(SimRound r, double target_accuracy) {
  r.cum_bytes_up = (rounds.empty() ? 0 : rounds.back().cum_bytes_up) + r.bytes_up;
  r.cum_bytes_down = (rounds.empty() ? 0 : rounds.back().cum_bytes_down) + r.bytes_down;
  if (target_accuracy > 0 && target_round == 0 && r.evaluated &&
      r.test_accuracy >= target_accuracy) {
    target_round = r.round;
    target_wall_seconds = r.wall_clock;
    target_sim_seconds = r.sim_clock;
  }
  rounds.push_back(std::move(r));
  return rounds.back();
}

Simulator::~Simulator() = default;

TimePoint Simulator::At(double seconds) const {
  return TimePoint{} +
         std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(seconds));
}

Result<std::unique_ptr<Simulator>> Simulator::Create(const SimConfig& config, SimData data) {
  TRIB_RETURN_IF_ERROR(config.Validate());
  if (!data.train || !data.test) return Status::InvalidArgument("simulator: missing data sets");
  std::unique_ptr<Simulator> s(new Simulator());
  s->config_ = config;
  s->data_ = data;
  const Dataset& train = *data.train;
  Result<ModelSpec> spec =
      ModelSpecByName(config.model, {train.height, train.width, train.channels}, train.num_classes);
  if (!spec.ok()) return spec.status().WithContext("key 'model'");
  s->spec_ = std::move(*spec);
  TRIB_ASSIGN_OR_RETURN(ModelWeights init, InitWeights(s->spec_, config.init_seed));
  s->layout_ = init.ZerosLike();
  TRIB_ASSIGN_OR_RETURN(s->population_, Population::Create(data.train, config.partition,
                                                           config.clients, config.seed));
  TRIB_ASSIGN_OR_RETURN(DeviceModel devices, DeviceModel::Create(config.hetero, config.seed));
  s->devices_ = std::move(devices);

  RoundConfig rc;
  rc.rounds = config.rounds;
  rc.clients_per_round = config.per_round;
  // Every registered client must be back (rejoined after a dropout) before a round starts, so
  // selection always sees the whole population.
  rc.min_available = config.clients;
  rc.over_selection = config.over_selection;
  rc.min_completed = config.min_completed > 0 ? config.min_completed : config.per_round;
  rc.round_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::llround(config.round_timeout_s * 1000)));
  rc.max_round_attempts = kMaxAttempts;
  rc.fit = config.fit;
  rc.codec = config.codec;
  rc.download_codec = config.download_codec;
  rc.seed = config.seed;
  Result<std::unique_ptr<Strategy>> strategy = MakeStrategy(config.strategy);
  if (!strategy.ok()) return strategy.status().WithContext("key 'strategy'");
  if (Status st = ValidateStrategyFor(**strategy, rc.min_completed); !st.ok())
    return st.WithContext("keys 'strategy' and 'min_completed'");
  if (float mu = (*strategy)->client_proximal_mu(); mu > 0.0f) rc.fit.proximal_mu = mu;
  RoundEngine::Hooks hooks;
  Simulator* self = s.get();
  hooks.on_round_complete = [self](const RoundSummary& sum, const ModelWeights& m) {
    self->OnRoundComplete(sum, m);
  };
  hooks.on_round_failed = [self](uint64_t round, int64_t attempt, const std::string& why) {
    spdlog::info("round {} attempt {} failed: {}", round, attempt, why);
    self->attempt_failed_ = true;
  };
  TRIB_ASSIGN_OR_RETURN(s->engine_, RoundEngine::Create(rc, std::move(*strategy), std::move(init),
                                                        0, 0, std::move(hooks)));

  s->pool_ = std::make_unique<ThreadPool>(static_cast<size_t>(config.threads));
  s->residuals_ = std::make_unique<ResidualStore>(config.residual_max_age_rounds,
                                                  config.residual_keep_fraction);
  // The test set in fixed slices, evaluated in parallel.
  const int64_t n = data.test->size();
  const int slices = static_cast<int>(std::min<int64_t>(kEvalSlices, n));
  for (int i = 0; i < slices && config.eval_every > 0; ++i) {
    std::vector<uint32_t> idx;
    for (int64_t j = n * i / slices; j < n * (i + 1) / slices; ++j)
      idx.push_back(static_cast<uint32_t>(j));
    auto slice = std::make_shared<const Dataset>(data.test->Subset(idx));
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<NativeTrainer> t,
                          NativeTrainer::Create(s->spec_, nullptr, slice, 0));
    s->evaluators_.push_back(std::move(t));
  }
  s->caps_.device = "sim";
  s->caps_.codecs = {config.codec};
  return s;
}

Status Simulator::Join() {
  if (joined_) return Status::Ok();
  const double t = WallNow();
  for (uint64_t i = 0; i < population_->size(); ++i) {
    caps_.num_examples = population_->num_examples(i);
    engine_->OnJoined(Population::ClientId(i), caps_, At(0.0));
  }
  result_.join_seconds = WallNow() - t;
  joined_ = true;
  return Status::Ok();
}

Result<EvalResult> Simulator::Evaluate(const ModelWeights& model) {
  std::vector<std::future<Result<EvalResult>>> parts;
  EvalConfig ec;
  ec.batch_size = static_cast<int>(config_.eval_batch);
  for (auto& e : evaluators_)
    parts.push_back(pool_->Submit([&e, &model, ec] { return e->evaluate(model, ec); }));
  double loss = 0.0, correct = 0.0;
  int64_t n = 0;
  Status first_error;
  for (auto& f : parts) {
    Result<EvalResult> r = f.get();
    if (!r.ok()) {
      if (first_error.ok()) first_error = r.status();
      continue;
    }
    loss += r->loss * static_cast<double>(r->num_examples);
    correct += std::round(r->accuracy * static_cast<double>(r->num_examples));
    n += r->num_examples;
  }
  TRIB_RETURN_IF_ERROR(first_error);
  EvalResult out;
  out.num_examples = n;
  out.loss = n > 0 ? loss / static_cast<double>(n) : 0.0;
  out.accuracy = n > 0 ? correct / static_cast<double>(n) : 0.0;
  return out;
}

void Simulator::OnRoundComplete(const RoundSummary& s, const ModelWeights& model) {
  SimRound& r = pending_;
  r.round = s.round;
  r.attempts = s.attempts;
  r.selected = s.selected;
  r.completed = s.completed;
  r.rejected = s.rejected;
  if (auto it = s.client_metrics.find("train_loss"); it != s.client_metrics.end())
    r.train_loss = it->second;
  r.sim_clock = now_;
  r.sim_seconds = now_ - round_start_sim_;
  if (config_.eval_every > 0 && s.round % static_cast<uint64_t>(config_.eval_every) == 0) {
    Result<EvalResult> e = Evaluate(model);
    if (e.ok()) {
      r.evaluated = true;
      r.test_accuracy = e->accuracy;
      r.test_loss = e->loss;
    } else {
      spdlog::error("evaluation of round {} failed: {}", s.round, e.status().ToString());
    }
  }
  round_closed_ = true;
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

  std::shared_ptr<Trainer> trainer;
  if (config_.trainer == "noop") {
    trainer = std::make_shared<NoopTrainer>(layout_, static_cast<int64_t>(n));
  } else {
    Dataset examples = population_->Materialize(c);
    if (config_.attack.parsed_kind() == AttackKind::kLabelFlip && Malicious(c))
      FlipLabels(&examples);
    auto local = std::make_shared<const Dataset>(std::move(examples));
    Result<std::unique_ptr<NativeTrainer>> t =
        NativeTrainer::Create(spec_, std::move(local), nullptr, config_.init_seed);
    if (!t.ok()) {
      job.error = t.status();
      return;
    }
    trainer = std::move(*t);
  }
  trainer = WithAttack(std::move(trainer), c, static_cast<int64_t>(n));
  TaskExecutor executor(trainer);
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
  return IsMaliciousClient(config_.seed, client, config_.attack.fraction);
}

std::shared_ptr<Trainer> Simulator::WithAttack(std::shared_ptr<Trainer> honest, uint64_t client,
                                               int64_t num_examples) const {
  const AttackKind kind = config_.attack.parsed_kind();
  if (kind == AttackKind::kNone || kind == AttackKind::kLabelFlip || !Malicious(client))
    return honest;
  if (kind == AttackKind::kAlie) {
    auto it = alie_metrics_.find(client);
    return std::make_shared<AttackTrainer>(std::move(honest), alie_delta_,
                                           it != alie_metrics_.end() ? it->second : Metrics{},
                                           num_examples);
  }
  return std::make_shared<AttackTrainer>(std::move(honest), config_.attack, num_examples);
}

Status Simulator::PrepareAttack(const std::vector<RoundEngine::Outgoing>& tasks) {
  alie_delta_.reset();
  alie_metrics_.clear();
  pending_.malicious = 0;
  if (config_.attack.parsed_kind() == AttackKind::kNone) return Status::Ok();
  std::vector<std::pair<uint64_t, const TaskAssignment*>> attackers;  // in selection order
  for (const RoundEngine::Outgoing& t : tasks) {
    std::optional<uint64_t> c = Population::IndexOf(t.client_id);
    if (c && *c < population_->size() && Malicious(*c))
      attackers.emplace_back(*c, &std::get<TaskAssignment>(t.message));
  }
  pending_.malicious = static_cast<int64_t>(attackers.size());
  if (config_.attack.parsed_kind() != AttackKind::kAlie || attackers.empty()) return Status::Ok();

  // ALIE phase 1: every attacker's honest delta, through the client's own TaskExecutor (same data,
  // decoded model and fit seed as its real fit), in parallel; then mu - z * sigma over them, in
  // selection order.
  struct Honest {
    std::vector<float> delta;
    Metrics metrics;
  };
  std::vector<std::future<Result<Honest>>> fits;
  for (const auto& [client, task] : attackers) {
    fits.push_back(pool_->Submit([this, c = client, task = task]() -> Result<Honest> {
      const auto n = static_cast<int64_t>(population_->num_examples(c));
      std::shared_ptr<Trainer> inner;
      if (config_.trainer == "noop") {
        inner = std::make_shared<NoopTrainer>(layout_, n);
      } else {
        auto local = std::make_shared<const Dataset>(population_->Materialize(c));
        TRIB_ASSIGN_OR_RETURN(
            std::unique_ptr<NativeTrainer> t,
            NativeTrainer::Create(spec_, std::move(local), nullptr, config_.init_seed));
        inner = std::move(t);
      }
      auto recorder = std::make_shared<RecordingTrainer>(std::move(inner));
      TaskExecutor executor(recorder);
      TRIB_RETURN_IF_ERROR(executor.Fit(*task).status());
      return Honest{std::move(recorder->delta()), recorder->metrics()};
    }));
  }
  std::vector<std::vector<float>> honest;
  Status first_error;
  for (size_t i = 0; i < fits.size(); ++i) {
    Result<Honest> r = fits[i].get();
    if (!r.ok()) {
      if (first_error.ok()) first_error = r.status().WithContext("attack.kind 'alie' honest fit");
      continue;
    }
    honest.push_back(std::move(r->delta));
    alie_metrics_[attackers[i].first] = std::move(r->metrics);
  }
  TRIB_RETURN_IF_ERROR(first_error);
  const double z = config_.attack.alie_z > 0.0 ? config_.attack.alie_z
                                               : AlieZMax(static_cast<int64_t>(tasks.size()),
                                                          static_cast<int64_t>(attackers.size()));
  alie_delta_ = std::make_shared<const std::vector<float>>(AlieDelta(honest, z));
  return Status::Ok();
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
  const double deadline = t0 + config_.round_timeout_s;
  auto open = [&] { return !round_closed_ && !attempt_failed_; };
  std::vector<std::string> departed;
  for (const Event& e : events) {
    if (open() && e.t > deadline) {
      now_ = deadline;
      engine_->OnTick(At(deadline));
    }
    if (e.leaves) {
      if (!open()) continue;  // leaving after the attempt ended changes nothing
      now_ = e.t;
      engine_->OnLeft(e.job->out->client_id, At(e.t));
      departed.push_back(e.job->out->client_id);
      continue;
    }
    pending_.bytes_up += e.job->bytes_up;
    if (!open()) {
      ++pending_.stragglers;  // sent, but the round had closed or passed its deadline
      continue;
    }
    now_ = e.t;
    Status s = engine_->OnUpdate(e.job->out->client_id, *e.job->submission, At(e.t));
    if (!s.ok()) spdlog::debug("update from {} rejected: {}", e.job->out->client_id, s.ToString());
  }
  if (open()) {
    now_ = std::max(now_, deadline);
    engine_->OnTick(At(deadline));
  }
  // Clients that left come back once the attempt is over (the next attempt can select them).
  for (const std::string& id : departed) {
    caps_.num_examples = population_->num_examples(*Population::IndexOf(id));
    engine_->OnJoined(id, caps_, At(now_));
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
  while (!engine_->finished()) {
    std::vector<RoundEngine::Outgoing> tasks;
    for (RoundEngine::Outgoing& o : engine_->TakeOutbox())
      if (std::holds_alternative<TaskAssignment>(o.message)) tasks.push_back(std::move(o));
    if (tasks.empty())
      return Status::Internal("simulator: the engine started no round (" +
                              std::to_string(engine_->registry().num_idle()) + " of " +
                              std::to_string(engine_->registry().size()) + " clients idle)");
    TRIB_RETURN_IF_ERROR(RunAttempt(std::move(tasks)));
  }
  on_round_ = nullptr;
  TRIB_RETURN_IF_ERROR(engine_->failure());
  result_.wall_seconds = WallNow() - wall_start_;
  result_.sim_seconds = now_;
  result_.final_model = engine_->model();
  result_.model_hash = engine_->model().content_hash();
  return result_;
}

}  // namespace tributary
