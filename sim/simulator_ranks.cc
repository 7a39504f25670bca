// Simulator's distributed part (sim/rank_link.h): rank 0 trains each batch of jobs over the ranks,
// the other ranks serve it.
//
// Rank 0 keeps everything a run decides: the engine, the device draws, the clients' error-feedback
// state (shipped with each job and back), which updates are accepted and in what order. Another
// rank only trains: it gets the task as a client would (the model once per rank per batch), runs
// the same RunJob through the client's TaskExecutor, and returns the update in wire form, which
// rank 0's decoder receives. A job's training is a pure function of (client, task, model, state),
// so the model, the events and the report are bitwise those of one process, for any number of
// ranks and threads. Split learning: under SFLV1 a job's server copy depends only on its own
// batches, so it trains on the job's rank, from the round's server part shipped with the work, and
// rank 0 adopts it into the round's average (SplitServer::AdoptCopy); SFLV2's one server part
// takes the clients in turn, so its jobs all train on rank 0.
#include <algorithm>
#include <future>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/log.h"
#include "protocol/message_codec.h"
#include "sim/rank_schedule.h"
#include "sim/rank_work.h"
#include "sim/sim_job.h"
#include "sim/sim_wire.h"
#include "split/split_server.h"

namespace tributary {

// The driver's evaluator: the simulator's, over the ranks when there are several.
class Simulator::RanksEvaluator final : public Evaluator {
 public:
  explicit RanksEvaluator(Simulator* sim) : sim_(sim) {}
  Result<EvalResult> Evaluate(const ModelWeights& model) override { return sim_->Evaluate(model); }

 private:
  Simulator* sim_;
};

std::shared_ptr<Evaluator> Simulator::MakeRanksEvaluator(Simulator* sim) {
  return std::make_shared<RanksEvaluator>(sim);
}

Result<EvalResult> Simulator::Evaluate(const ModelWeights& model) {
  if (!ranks_) return evaluator_->Evaluate(model);
  // Rank r evaluates slices [r*S/P, (r+1)*S/P); the results are combined in slice order, as in
  // one process.
  const size_t slices = evaluator_->num_slices();
  const auto ranks = static_cast<size_t>(ranks_->size());
  auto first = [&](size_t r) { return slices * r / ranks; };
  const double t0 = SimWallNow();
  std::vector<double> busy(ranks, 0.0);
  RankWork work;
  work.eval_model.assign(model.data().begin(), model.data().end());
  for (size_t r = 1; r < ranks; ++r) {
    work.eval_slices.clear();
    for (size_t i = first(r); i < first(r + 1); ++i)
      work.eval_slices.push_back(static_cast<uint32_t>(i));
    if (!work.eval_slices.empty())
      TRIB_RETURN_IF_ERROR(ranks_->Send(static_cast<int>(r), EncodeRankWork(work)));
  }
  std::vector<size_t> mine;
  for (size_t i = first(0); i < first(1); ++i) mine.push_back(i);
  std::vector<Result<EvalResult>> parts(slices, Status::Internal("evaluation slice not returned"));
  std::vector<Result<EvalResult>> here = evaluator_->EvaluateSlices(model, mine);
  for (size_t k = 0; k < here.size() && k < mine.size(); ++k) parts[mine[k]] = std::move(here[k]);
  busy[0] = SimWallNow() - t0;
  Status outcome;
  for (size_t r = 1; r < ranks; ++r) {
    if (first(r) == first(r + 1)) continue;
    TRIB_ASSIGN_OR_RETURN(std::string bytes, ranks_->Receive(static_cast<int>(r)));
    Result<RankResults> results = DecodeRankResults(bytes);
    if (!results.ok()) {
      outcome = results.status();
      continue;
    }
    busy[r] = results->busy_seconds;
    for (const RankSliceResult& s : results->slices) {
      if (s.slice < first(r) || s.slice >= first(r + 1)) {
        outcome = Status::Corruption("distributed simulation: an evaluation slice of another rank");
        continue;
      }
      if (s.code != 0) {
        parts[s.slice] = Status(static_cast<StatusCode>(s.code), s.message);
        continue;
      }
      EvalResult e;
      e.loss = s.loss;
      e.accuracy = s.accuracy;
      e.num_examples = s.num_examples;
      parts[s.slice] = e;
    }
  }
  TRIB_RETURN_IF_ERROR(outcome);
  NoteExchange(SimWallNow() - t0, busy);
  return ModelEvaluator::Combine(parts);
}

std::vector<RankSliceResult> Simulator::EvaluateHere(const RankWork& work) {
  std::vector<RankSliceResult> out;
  Status refused;
  // The run's whole model (in a split run, the device and server parts joined).
  ModelWeights model = driver_->model().ZerosLike();
  if (!evaluator_)
    refused = Status::FailedPrecondition("this rank has no server-side evaluation (eval.every)");
  else if (work.eval_model.size() != model.size())
    refused = Status::InvalidArgument("the model to evaluate has " +
                                      std::to_string(work.eval_model.size()) + " values, not " +
                                      std::to_string(model.size()));
  std::vector<size_t> which(work.eval_slices.begin(), work.eval_slices.end());
  std::vector<Result<EvalResult>> parts;
  if (refused.ok()) {
    std::copy(work.eval_model.begin(), work.eval_model.end(), model.data().begin());
    parts = evaluator_->EvaluateSlices(model, which);
  }
  for (size_t k = 0; k < which.size(); ++k) {
    RankSliceResult s;
    s.slice = static_cast<uint32_t>(which[k]);
    const Status st = refused.ok() ? parts[k].status() : refused;
    s.code = static_cast<int32_t>(st.code());
    s.message = st.message();
    if (st.ok()) {
      s.loss = parts[k]->loss;
      s.accuracy = parts[k]->accuracy;
      s.num_examples = parts[k]->num_examples;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Status Simulator::SetRanks(RankLink* ranks) {
  if (joined_) return Status::FailedPrecondition("simulator: SetRanks after the clients joined");
  ranks_ = ranks && ranks->size() > 1 ? ranks : nullptr;
  return Status::Ok();
}

uint64_t Simulator::Fingerprint() const {
  Fnv1a64 h;
  const uint64_t n = population_->size();
  h.Add(&n, sizeof n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t e = population_->num_examples(i);
    h.Add(&e, sizeof e);
  }
  const Dataset& train = *data_.train;
  const int64_t shape[] = {train.size(), train.height, train.width, train.channels,
                           train.num_classes};
  h.Add(shape, sizeof shape);
  const uint64_t layout = driver_->engine().model().fingerprint();
  h.Add(&layout, sizeof layout);
  const uint64_t seeds[] = {config_.run.round.seed, config_.run.init_seed, config_.data.seed};
  h.Add(seeds, sizeof seeds);
  h.Add(config_.trainer.data(), config_.trainer.size());
  h.Add(config_.run.round.codec.data(), config_.run.round.codec.size());
  return h.value();
}

Status Simulator::GreetRanks() {
  if (!ranks_ || ranks_greeted_) return Status::Ok();
  ranks_greeted_ = true;
  const uint64_t mine = Fingerprint();
  Status refused;
  for (int r = 1; r < ranks_->size(); ++r) {
    TRIB_ASSIGN_OR_RETURN(std::string bytes, ranks_->Receive(r));
    TRIB_ASSIGN_OR_RETURN(RankHello hello, DecodeRankHello(bytes));
    if (refused.ok() && (hello.rank != r || hello.fingerprint != mine))
      refused = Status::FailedPrecondition(fmt::format(
          "distributed simulation: rank {} loaded other data or another config than rank 0 "
          "(fingerprint {:016x}, rank 0's {:016x}): every rank must run the same build with the "
          "same config, the same data files and the same --set overrides",
          r, hello.fingerprint, mine));
  }
  if (refused.ok())
    Log().info("distributed simulation: {} ranks, {} threads each", ranks_->size(), pool_->size());
  return refused;
}

void Simulator::StopRanks() {
  if (!ranks_ || ranks_stopped_) return;
  ranks_stopped_ = true;
  RankWork stop;
  stop.stop = true;
  const std::string bytes = EncodeRankWork(stop);
  for (int r = 1; r < ranks_->size(); ++r)
    if (Status s = ranks_->Send(r, bytes); !s.ok())
      Log().error("distributed simulation: could not stop rank {}: {}", r, s.ToString());
}

Status Simulator::TrainJobsHere(const std::vector<Job*>& jobs,
                                const std::vector<uint64_t>& bytes_down) {
  // SFLV2's one server part trains every client's batches in turn: the clients train one after
  // another, in the engine's order, so the result is the same whatever the thread count.
  if (const SplitServer* split = driver_->split_server();
      split && split->mode() == SplitMode::kSflV2) {
    for (size_t i = 0; i < jobs.size(); ++i) RunJob(*jobs[i], bytes_down[i]);
    return Status::Ok();
  }
  std::vector<std::future<void>> done;
  for (size_t i = 0; i < jobs.size(); ++i)
    done.push_back(pool_->Submit([this, job = jobs[i], bd = bytes_down[i]] { RunJob(*job, bd); }));
  for (auto& f : done) f.get();
  return Status::Ok();
}

Status Simulator::TrainJobs(const std::vector<Job*>& jobs,
                            const std::vector<uint64_t>& bytes_down) {
  const int ranks = ranks_ ? ranks_->size() : 1;
  if (ranks <= 1) return TrainJobsHere(jobs, bytes_down);
  SplitServer* split = driver_->split_server();
  if (split && split->mode() == SplitMode::kSflV2) {
    // SFLV2's one server part takes every client's batches in turn: nothing to share out.
    if (!sflv2_noted_)
      Log().info(
          "distributed simulation: SFLV2 trains its clients in turn on rank 0 (its one "
          "server part takes their batches one after another); the other ranks wait");
    sflv2_noted_ = true;
    return TrainJobsHere(jobs, bytes_down);
  }
  // Where each job trains: balanced by its examples; a job that never trains (its device draws
  // say it is unreachable or drops out) and a malicious client's (its attack lives here) stay.
  std::vector<RankJobCost> costs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = *jobs[i];
    const auto& task = std::get<TaskAssignment>(job.out->message);
    const double samples = Samples(job.index, task);
    const TaskTiming t = TimeJob(job, bytes_down[i], 0, samples);
    const bool trains = t.available && !t.drops;
    costs.push_back({job.index, trains ? samples : 0.0, !trains || Malicious(job.index)});
  }
  const std::vector<int> where = AssignToRanks(costs, ranks);
  const double t0 = SimWallNow();

  // The batch's distinct models (with SCAFFOLD's control variate, which changes with them), each
  // encoded once (a task's TaskAssignment in the wire format); the jobs' shells carry neither.
  struct Model {
    const TaskAssignment* task;
    std::vector<uint8_t> bytes;
  };
  std::vector<Model> models;
  auto same = [](const TaskAssignment& x, const TaskAssignment& y) {
    const ModelPayload &a = x.model, &b = y.model;
    return a.layout_fingerprint == b.layout_fingerprint && a.encoding == b.encoding &&
           a.values.data() == b.values.data() && a.values.size() == b.values.size() &&
           a.encoded.data() == b.encoded.data() && a.encoded.size() == b.encoded.size() &&
           x.control.data() == y.control.data() && x.control.size() == y.control.size();
  };
  std::vector<RankWork> work(static_cast<size_t>(ranks));
  std::vector<std::vector<size_t>> slots(static_cast<size_t>(ranks));  // job indices by rank
  std::vector<std::vector<uint32_t>> rank_models(static_cast<size_t>(ranks));
  std::vector<Job*> local;
  std::vector<uint64_t> local_bytes_down;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (where[i] == 0) {
      local.push_back(jobs[i]);
      local_bytes_down.push_back(bytes_down[i]);
      continue;
    }
    Job& job = *jobs[i];
    const auto r = static_cast<size_t>(where[i]);
    const auto& task = std::get<TaskAssignment>(job.out->message);
    size_t m = 0;
    while (m < models.size() && !same(*models[m].task, task)) ++m;
    if (m == models.size()) {
      TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, EncodeMessageBody(Message(task)));
      models.push_back({&task, std::move(bytes)});
    }
    auto k = std::find(rank_models[r].begin(), rank_models[r].end(), m);
    if (k == rank_models[r].end()) {
      rank_models[r].push_back(static_cast<uint32_t>(m));
      work[r].models.push_back(models[m].bytes);
      k = rank_models[r].end() - 1;
    }
    TaskAssignment shell = task;
    shell.model = ModelPayload{};
    shell.control = SharedFloats();
    RankJob rj;
    rj.slot = slots[r].size();
    rj.client = job.index;
    rj.task = job.task;
    rj.attempt = attempt_;
    rj.bytes_down = bytes_down[i];
    rj.model = static_cast<uint32_t>(k - rank_models[r].begin());
    TRIB_ASSIGN_OR_RETURN(rj.shell, EncodeMessageBody(Message(std::move(shell))));
    rj.state = residuals_->Get(job.index, task.round);
    if (!task.control.empty()) rj.control = controls_->Get(job.index);
    work[r].jobs.push_back(std::move(rj));
    slots[r].push_back(i);
  }
  if (split && !jobs.empty()) {
    // SFLV1: each job's server copy trains where the job does, from the round's server part.
    const FitConfig fit = split->round_fit();
    const ModelWeights& server = split->weights();
    for (int r = 1; r < ranks; ++r) {
      RankWork& w = work[static_cast<size_t>(r)];
      if (w.jobs.empty()) continue;
      w.split_round = std::get<TaskAssignment>(jobs[0]->out->message).round;
      w.split_server.assign(server.data().begin(), server.data().end());
      w.split_batch_size = fit.batch_size;
      w.split_lr = fit.lr;
      w.split_momentum = fit.momentum;
      w.split_weight_decay = fit.weight_decay;
      w.split_optimizer = fit.optimizer;
      w.split_beta1 = fit.beta1;
      w.split_beta2 = fit.beta2;
      w.split_eps = fit.eps;
    }
  }
  for (int r = 1; r < ranks; ++r)
    if (!work[static_cast<size_t>(r)].jobs.empty())
      TRIB_RETURN_IF_ERROR(ranks_->Send(r, EncodeRankWork(work[static_cast<size_t>(r)])));
  work.clear();
  // This rank's share meanwhile.
  TRIB_RETURN_IF_ERROR(TrainJobsHere(local, local_bytes_down));
  std::vector<double> busy(static_cast<size_t>(ranks), 0.0);
  busy[0] = SimWallNow() - t0;
  // Every rank's results are received before any is judged, so that no rank is left waiting.
  Status outcome;
  std::vector<size_t> to_mask;  // secure aggregation: updates that rank 0 masks for their clients
  for (int r = 1; r < ranks; ++r) {
    const auto& mine = slots[static_cast<size_t>(r)];
    if (mine.empty()) continue;
    Result<std::string> bytes = ranks_->Receive(r);
    if (!bytes.ok()) return bytes.status();
    Result<RankResults> results = DecodeRankResults(*bytes);
    if (results.ok()) busy[static_cast<size_t>(r)] = results->busy_seconds;
    if (!results.ok() || results->jobs.size() != mine.size()) {
      if (outcome.ok())
        outcome = results.ok() ? Status::Corruption(fmt::format(
                                     "distributed simulation: rank {} returned {} results for {} "
                                     "jobs",
                                     r, results->jobs.size(), mine.size()))
                               : results.status();
      continue;
    }
    for (RankJobResult& res : results->jobs) {
      if (res.slot >= mine.size()) {
        outcome = Status::Corruption("distributed simulation: a result for no job");
        break;
      }
      const size_t i = mine[res.slot];
      Job& job = *jobs[i];
      const auto& task = std::get<TaskAssignment>(job.out->message);
      if (res.code != 0) job.error = Status(static_cast<StatusCode>(res.code), res.message);
      job.abandoned = res.abandoned;
      if (res.state) residuals_->Put(job.index, task.round, std::move(*res.state));
      if (!res.control.empty()) {
        if (res.control.size() != driver_->engine().model().size()) {
          outcome = Status::Corruption("distributed simulation: a control variate of another size");
          break;
        }
        controls_->Put(job.index, std::move(res.control));
      }
      const double samples = Samples(job.index, task);
      job.split_batches = res.split_batches;
      job.split_bytes_up = res.split_bytes_up;
      job.split_bytes_down = res.split_bytes_down;
      if (!res.split_copy.empty()) {
        if (!split || res.split_copy.size() != split->weights().size()) {
          outcome = Status::Corruption("distributed simulation: a server copy of another size");
          break;
        }
        SplitCopy copy{split->weights(),
                       {res.split_batches, res.split_samples, res.split_bytes_in,
                        res.split_bytes_out, res.split_seconds}};
        std::copy(res.split_copy.begin(), res.split_copy.end(), copy.weights.data().begin());
        if (Status adopted = split->AdoptCopy(job.out->client_id, std::move(copy)); !adopted.ok()) {
          outcome = adopted;
          break;
        }
      }
      if (!res.body.empty() && job.error.ok()) {
        Result<Message> got = FromWire(MessageType::kUpdateSubmission, std::move(res.body));
        if (!got.ok()) {
          job.error = got.status().WithContext(job.out->client_id);
          continue;
        }
        job.submission = std::get<UpdateSubmission>(std::move(*got));
        job.bytes_up = res.bytes_up;
        job.timing = TimeJob(job, bytes_down[i], job.bytes_up, samples);
        if (job.split_batches > 0)
          devices_->AddSplitExchange(job.index, job.split_batches * SplitRoundTrips(),
                                     job.split_bytes_up, job.split_bytes_down, &job.timing);
        if (job.secagg) to_mask.push_back(i);
      } else {
        job.timing = TimeJob(job, bytes_down[i], 0, samples);
      }
    }
  }
  NoteExchange(SimWallNow() - t0, busy);
  // With secure aggregation each client's secrets stay on rank 0, with its SecAggTask: the other
  // ranks trained, and the masking (in the integer domain, as that client would) happens here.
  std::vector<std::future<void>> masking;
  for (size_t i : to_mask)
    masking.push_back(pool_->Submit([this, job = jobs[i], bd = bytes_down[i]] {
      UpdateSubmission sub = std::move(*job->submission);
      job->submission.reset();
      MaskJob(*job, std::move(sub), bd);
    }));
  for (auto& f : masking) f.get();
  return outcome;
}

void Simulator::NoteExchange(double wall, const std::vector<double>& busy) {
  const double busiest = *std::max_element(busy.begin(), busy.end());
  ++result_.rank_exchanges;
  result_.rank_compute_seconds += busiest;
  result_.rank_link_seconds += std::max(0.0, wall - busiest);
  for (double b : busy) result_.rank_idle_seconds += busiest - b;
}

Status Simulator::Serve() {
  if (!ranks_ || ranks_->rank() == 0)
    return Status::FailedPrecondition("simulator: Serve is for the ranks other than 0");
  TRIB_RETURN_IF_ERROR(ranks_->Send(0, EncodeRankHello({ranks_->rank(), Fingerprint()})));
  for (;;) {
    TRIB_ASSIGN_OR_RETURN(std::string bytes, ranks_->Receive(0));
    const double t0 = SimWallNow();
    TRIB_ASSIGN_OR_RETURN(RankWork work, DecodeRankWork(bytes));
    bytes.clear();
    if (work.stop) return Status::Ok();
    if (!work.eval_slices.empty()) {
      RankResults results;
      results.slices = EvaluateHere(work);
      results.busy_seconds = SimWallNow() - t0;
      TRIB_RETURN_IF_ERROR(ranks_->Send(0, EncodeRankResults(results)));
      continue;
    }
    std::vector<ModelPayload> models;
    std::vector<SharedFloats> controls;  // SCAFFOLD's, with each model
    for (auto& m : work.models) {
      TRIB_ASSIGN_OR_RETURN(Message msg, FromWire(MessageType::kTaskAssignment, std::move(m)));
      auto& task = std::get<TaskAssignment>(msg);
      models.push_back(std::move(task.model));
      controls.push_back(std::move(task.control));
    }
    const size_t n = work.jobs.size();
    std::vector<RunEngine::Outgoing> outs(n);
    std::vector<Job> jobs(n);
    std::vector<Job*> batch;
    std::vector<uint64_t> bytes_down;
    for (size_t i = 0; i < n; ++i) {
      RankJob& rj = work.jobs[i];
      if (rj.client >= population_->size())
        return Status::Corruption(
            fmt::format("distributed simulation: rank 0 sent a job for client {} of {}", rj.client,
                        population_->size()));
      TRIB_ASSIGN_OR_RETURN(Message shell, FromWire(MessageType::kTaskAssignment, rj.shell));
      auto task = std::get<TaskAssignment>(std::move(shell));
      task.model = models[rj.model];
      task.control = controls[rj.model];
      outs[i].client_id = Population::ClientId(rj.client);
      outs[i].message = std::move(task);
      jobs[i].index = rj.client;
      jobs[i].out = &outs[i];
      jobs[i].task = rj.task;
      jobs[i].remote = true;
      jobs[i].state = std::move(rj.state);
      jobs[i].control = std::move(rj.control);
      attempt_ = rj.attempt;  // the device draws' key, the same for the batch
      batch.push_back(&jobs[i]);
      bytes_down.push_back(rj.bytes_down);
    }
    // SFLV1: the jobs' server copies start from the round's server part, as on rank 0.
    SplitServer* split = driver_->split_server();
    const bool split_round = split && !work.split_server.empty();
    if (split_round) {
      if (work.split_server.size() != split->weights().size())
        return Status::Corruption(fmt::format(
            "distributed simulation: rank 0 sent a server part of {} values; this rank's has {}",
            work.split_server.size(), split->weights().size()));
      ModelWeights server = split->weights();
      std::copy(work.split_server.begin(), work.split_server.end(), server.data().begin());
      TRIB_RETURN_IF_ERROR(split->LoadWeights(server));
      FitConfig fit;
      fit.batch_size = work.split_batch_size;
      fit.lr = work.split_lr;
      fit.momentum = work.split_momentum;
      fit.weight_decay = work.split_weight_decay;
      fit.optimizer = work.split_optimizer;
      fit.beta1 = work.split_beta1;
      fit.beta2 = work.split_beta2;
      fit.eps = work.split_eps;
      std::vector<std::string> clients;
      for (const RunEngine::Outgoing& out : outs) clients.push_back(out.client_id);
      split->OpenRound(work.split_round, fit, clients);
    }
    TRIB_RETURN_IF_ERROR(TrainJobsHere(batch, bytes_down));
    RankResults results;
    for (size_t i = 0; i < n; ++i) {
      Job& job = jobs[i];
      RankJobResult res;
      res.slot = work.jobs[i].slot;
      res.code = static_cast<int32_t>(job.error.code());
      res.message = job.error.message();
      res.abandoned = job.abandoned;
      res.bytes_up = job.bytes_up;
      res.body = std::move(job.wire);
      res.state = std::move(job.state);
      res.control = std::move(job.control);
      res.split_batches = job.split_batches;
      res.split_bytes_up = job.split_bytes_up;
      res.split_bytes_down = job.split_bytes_down;
      if (split_round) {
        if (std::optional<SplitCopy> copy = split->TrainedCopy(job.out->client_id)) {
          res.split_copy.assign(copy->weights.data().begin(), copy->weights.data().end());
          res.split_samples = copy->stats.samples;
          res.split_bytes_in = copy->stats.bytes_in;
          res.split_bytes_out = copy->stats.bytes_out;
          res.split_seconds = copy->stats.compute_seconds;
        }
      }
      results.jobs.push_back(std::move(res));
    }
    if (split_round) split->AbandonRound();
    results.busy_seconds = SimWallNow() - t0;
    TRIB_RETURN_IF_ERROR(ranks_->Send(0, EncodeRankResults(results)));
  }
}

}  // namespace tributary
