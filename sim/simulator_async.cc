// Simulator::RunAsync: an asynchronous run (run.mode = "async") as a discrete-event loop in
// simulated time.
//
// Every task the engine sends becomes a flight: the client's device draws (DeviceModel::TimeTask,
// keyed by the task's number in the order the engine sent them) say whether it is reachable,
// whether it drops out and when, and how long download, compute and upload take. The loop
// delivers the earliest event next: a finished update (OnUpdate, however late: a straggler is
// judged by the engine), a client leaving (unreachable at the start of its task, or dropping out
// in it; it comes back run.round_timeout later), a client rejoining, or the engine's wake-up (a
// task's deadline), in simulated-time order with ties broken by kind (rejoin, then update or
// leave, then the engine's tick) and client index. Events at a deadline come before it.
//
// Training runs on the pool, many tasks at once: an update's time is known only after its task is
// trained (the upload depends on the encoded size), but not before sent + download + compute +
// latency, so the loop trains, together, every untrained flight that could come before the
// earliest event it knows, and delivers events while none can. Each task's training is a pure
// function of (client, task, model), so the events and the model are the same, bit for bit,
// whatever the thread count.
#include <algorithm>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "core/log.h"
#include "sim/sim_clock.h"
#include "sim/sim_job.h"
#include "sim/sim_wire.h"

namespace tributary {
namespace {

// What happens to a flight, in the order of events at the same time.
enum class EventKind { kRejoin = 0, kFlight = 1, kTick = 2 };

}  // namespace

struct Simulator::Flight {
  RunEngine::Outgoing out;
  Job* job = nullptr;  // owned by the loop's jobs
  double sent = 0.0;
  uint64_t bytes_down = 0;
  bool trained = false;  // its event time is final
  bool leaves = false;   // unreachable or dropping out: its event is a leave
  double at = 0.0;       // the event's time once trained; before, a lower bound
};

Status Simulator::RunAsync() {
  RunEngine& engine = driver_->engine();
  const double away = std::chrono::duration<double>(config_.run.round.round_timeout).count();
  std::map<std::string, Flight> flights;             // by client
  std::map<std::string, std::unique_ptr<Job>> jobs;  // the flights' jobs
  std::set<std::pair<double, uint64_t>> rejoins;     // (time, client index)
  uint64_t tasks_seen = 0;
  uint64_t cached_version = std::numeric_limits<uint64_t>::max(), cached_bytes = 0;
  pending_ = SimRound{};
  round_start_sim_ = now_;
  round_start_wall_ = SimWallNow();

  const bool secure = config_.run.round.secagg.enabled;
  // The engine's new tasks become flights. A client sent a new task while its old one still runs
  // (the engine let it go at its deadline) gives the old one up. With secure aggregation a task
  // comes after its cohort's SecAggStart: an unreachable member leaves at once (the engine learns
  // it before the key phases), the others advertise their keys, and the engine's rosters, inboxes
  // and unmask requests are answered at once, until it has nothing more to say (the key phases
  // take no simulated time; the masked input goes when the update would have).
  auto take_one = [&](RunEngine::Outgoing& o,
                      std::map<std::string, SecAggStartMsg>& starts) -> Status {
    if (auto* start = std::get_if<SecAggStartMsg>(&o.message)) {
      starts[o.client_id] = std::move(*start);
      return Status::Ok();
    }
    const auto* task = std::get_if<TaskAssignment>(&o.message);
    // A refusal's Error (a late masked input: its cohort had ended) is counted where it was
    // refused; evaluation tasks are not simulated.
    if (!task)
      return secure && !std::holds_alternative<Error>(o.message) ? ReplySecAgg(o) : Status::Ok();
    std::optional<uint64_t> index = Population::IndexOf(o.client_id);
    if (!index || *index >= population_->size())
      return Status::Internal("the engine assigned unknown client '" + o.client_id + "'");
    if (flights.erase(o.client_id)) ++pending_.stragglers;
    if (task->model_version != cached_version) {  // one download's framed size per version
      TRIB_ASSIGN_OR_RETURN(cached_bytes, FramedBytesWithoutFrozen(o.message));
      cached_version = task->model_version;
    }
    const uint64_t bytes_down = cached_bytes + FrozenValueBytes(o.message);
    auto job = std::make_unique<Job>();
    job->index = *index;
    job->task = tasks_seen++;
    const std::string id = o.client_id;
    Flight& f = flights[id];
    f = Flight{};
    f.out = std::move(o);
    job->out = &f.out;
    f.job = job.get();
    jobs[id] = std::move(job);
    f.sent = now_;
    f.bytes_down = bytes_down;
    const auto& t = std::get<TaskAssignment>(f.out.message);
    const TaskTiming timing = TimeJob(*f.job, f.bytes_down, 0, Samples(*index, t));
    if (!timing.available) {
      ++pending_.unavailable;
      if (secure) {  // never hears of its cohort
        secagg_.erase(id);
        flights.erase(id);
        jobs.erase(id);
        engine.OnLeft(id, At(now_));
        rejoins.insert({now_ + away, *index});
        return Status::Ok();
      }
      f.leaves = f.trained = true;
      f.at = now_;
      return Status::Ok();
    }
    pending_.bytes_down += f.bytes_down;
    if (secure) {
      auto start = starts.find(id);
      if (start == starts.end())
        return Status::Internal("the engine sent " + id + " a task without a SecAggStart");
      TRIB_RETURN_IF_ERROR(JoinSecAgg(*f.job, start->second));
      starts.erase(start);
    }
    if (timing.drops) {
      ++pending_.dropouts;
      f.leaves = f.trained = true;
      f.at = now_ + timing.drop_at_s;
      return Status::Ok();
    }
    // No upload is faster than its latency.
    f.at = now_ + timing.download_s + timing.compute_s + devices_->Profile(*index).latency_s;
    return Status::Ok();
  };
  auto absorb = [&]() -> Status {
    for (int pass = 0; pass < 64; ++pass) {
      std::vector<RunEngine::Outgoing> out = engine.TakeOutbox();
      if (out.empty()) return Status::Ok();
      std::map<std::string, SecAggStartMsg> starts;
      for (RunEngine::Outgoing& o : out) TRIB_RETURN_IF_ERROR(take_one(o, starts));
      if (!secure) return Status::Ok();
    }
    return Status::Internal("simulator: secure aggregation's phases did not settle");
  };

  TRIB_RETURN_IF_ERROR(absorb());
  while (!engine.finished() && !AtTarget() && !StopRequested()) {
    // The earliest event known; untrained flights that could come first are trained, together.
    const Flight* first = nullptr;
    for (;;) {
      first = nullptr;
      double bound = std::numeric_limits<double>::infinity();
      for (const auto& [id, f] : flights) {
        if (!f.trained) {
          bound = std::min(bound, f.at);
        } else if (!first || f.at < first->at ||
                   (f.at == first->at && f.job->index < first->job->index)) {
          first = &f;
        }
      }
      const double known = first ? first->at : std::numeric_limits<double>::infinity();
      if (bound > known || bound == std::numeric_limits<double>::infinity()) break;
      std::vector<Flight*> train;
      for (auto& [id, f] : flights)
        if (!f.trained && f.at <= known) train.push_back(&f);
      std::vector<Job*> batch;
      std::vector<uint64_t> bytes_down;
      for (Flight* f : train) {
        batch.push_back(f->job);
        bytes_down.push_back(f->bytes_down);
      }
      TRIB_RETURN_IF_ERROR(TrainJobs(batch, bytes_down));
      for (Flight* f : train) {
        TRIB_RETURN_IF_ERROR(f->job->error);
        f->trained = true;
        f->at = f->sent + f->job->timing.finish_s();
      }
    }
    // The next event: a rejoin, a flight's, or the engine's tick, in that order at equal times.
    std::optional<TimePoint> wake = engine.next_wakeup();
    const double tick = wake ? SimSeconds(*wake) : std::numeric_limits<double>::infinity();
    const double rejoin =
        rejoins.empty() ? std::numeric_limits<double>::infinity() : rejoins.begin()->first;
    const double flight = first ? first->at : std::numeric_limits<double>::infinity();
    EventKind kind = EventKind::kRejoin;
    double t = rejoin;
    if (flight < t) kind = EventKind::kFlight, t = flight;
    if (tick < t) kind = EventKind::kTick, t = tick;
    if (t == std::numeric_limits<double>::infinity())
      return Status::Internal(
          "simulator: the asynchronous engine has no task in flight and nothing to wait for (" +
          std::to_string(engine.registry().num_idle()) + " of " +
          std::to_string(engine.registry().size()) + " clients idle)");
    now_ = std::max(now_, t);
    if (kind == EventKind::kRejoin) {
      const uint64_t index = rejoins.begin()->second;
      rejoins.erase(rejoins.begin());
      caps_.num_examples = population_->num_examples(index);
      engine.OnJoined(Population::ClientId(index), caps_, At(now_));
    } else if (kind == EventKind::kTick) {
      engine.OnTick(std::max(At(now_), *wake));  // never before the wake-up (sim_clock.h)
    } else {
      const std::string id = first->out.client_id;
      const uint64_t index = first->job->index;
      const bool leaves = first->leaves;
      std::unique_ptr<Job> job = std::move(jobs.at(id));
      jobs.erase(id);
      flights.erase(id);
      if (leaves) {
        secagg_.erase(id);
        engine.OnLeft(id, At(now_));
        rejoins.insert({now_ + away, index});
      } else if (job->abandoned) {
        Log().debug("{}: its secure aggregation cohort ended before it finished", id);
      } else {
        pending_.bytes_up += job->bytes_up;
        Status s;
        if (job->masked) {
          pending_.secagg_client_seconds += job->secagg_seconds;
          const double wall = SimWallNow();
          s = engine.OnSecAgg(id, *job->masked, At(now_));
          pending_.secagg_server_seconds += SimWallNow() - wall;
        } else {
          s = engine.OnUpdate(id, *job->submission, At(now_));
        }
        if (!s.ok()) {
          ++pending_.stragglers;  // late or stale: the simulator sends nothing malformed
          Log().debug("update from {} refused: {}", id, s.ToString());
        }
      }
    }
    TRIB_RETURN_IF_ERROR(absorb());
    if (round_closed_) {
      round_closed_ = false;
      RecordRound();
      residuals_->Expire(engine.rounds_done() + 1);
      pending_ = SimRound{};
      round_start_sim_ = now_;
      round_start_wall_ = SimWallNow();
    }
  }
  return Status::Ok();
}

}  // namespace tributary
