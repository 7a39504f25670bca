// RunEngine: the coordinator's aggregation logic as a state machine, knowing nothing of sockets;
// what CoordinatorService (the network), the Simulator (virtual clients) and the tests drive.
//
// It is fed events (a client joined or left, an update, an evaluation result or a secure
// aggregation message arrived, time passed: OnTick) and queues messages for clients, which the
// driver takes with TakeOutbox() and delivers. Two engines implement it:
//   - RoundEngine (round_engine.h): synchronous rounds. A round selects its clients, waits for K
//     updates or its deadline, and every update is computed against the round's model.
//   - AsyncEngine (async_engine.h): buffered asynchronous aggregation (FedBuff). At most C clients
//     train at once, each finished client is replaced at once, and after every K accepted updates
//     (each weighted down by its staleness) the strategy takes one step.
// MakeRunEngine (run_engine_factory.h) picks one from RoundConfig::mode (run.mode). In both, a
// "round" in the hooks, the summaries and rounds_done() is one new model version: a synchronous
// round, or an asynchronous step (a buffer applied).
//
// The parts both engines use are their own classes: update validation (update_check.h), the
// per-version download payload (download_cache.h) and federated evaluation (federated_eval.h).
//
// Not thread-safe: call every method from one strand. Time comes from the caller (`now`), so
// tests and the simulator drive deadlines without sleeping.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "aggregation/strategy.h"
#include "coordinator/client_registry.h"
#include "coordinator/round_config.h"
#include "privacy/dp/dp_aggregator.h"
#include "protocol/messages.h"

namespace tributary {

// An asynchronous step's staleness figures (AsyncEngine): how old the updates it applied were.
struct StalenessSummary {
  double mean = 0.0;  // mean staleness of the step's accepted updates, in model versions
  uint64_t max = 0;
  // histogram[t] = the step's accepted updates computed against the model t versions behind the
  // current one, t = 0 .. min(run.max_staleness, 64); the last bucket holds every t from it up.
  std::vector<uint64_t> histogram;
  int64_t in_flight = 0;  // clients training when the step was taken
};

// A split learning round's server-side figures (split.mode; split/split_server.h): what the
// server part trained on and what it cost, over every attempt of the round.
struct SplitRoundReport {
  uint64_t batches = 0;         // batches of activations the server part trained on
  uint64_t samples = 0;         // samples in them
  uint64_t bytes_in = 0;        // encoded activations received
  uint64_t bytes_out = 0;       // encoded gradients sent
  double server_seconds = 0.0;  // the server part's compute, summed over its threads
};

struct RoundSummary {
  uint64_t round = 0;          // 1-based number of the round (or asynchronous step) that closed
  uint64_t model_version = 0;  // the version produced by this round
  int64_t attempts = 0;        // 1 when the first attempt succeeded
  int64_t selected = 0;        // clients sent a task (asynchronous: since the previous step)
  int64_t accepted = 0;        // updates folded in
  int64_t refused = 0;         // updates refused (late, duplicate, malformed, ...)
  int64_t dropped = 0;         // selected clients that left, never answered or failed their task
  uint64_t bytes_down = 0;     // model payload bytes sent in this round's assignments
  uint64_t bytes_up = 0;       // encoded update bytes received
  uint64_t num_examples = 0;
  double duration_s = 0.0;
  Metrics client_metrics;           // num_examples-weighted mean of the clients' reported metrics
  std::optional<DpRoundReport> dp;  // with differential privacy: the clip, noise and epsilon
  std::optional<StalenessSummary> staleness;  // an asynchronous step's; none for a round
  // A split run's (RunDriver fills it in when the round closes; engines leave it empty).
  std::optional<SplitRoundReport> split;
};

// A federated evaluation's outcome, weighted by each client's num_examples.
struct FederatedEvalSummary {
  uint64_t round = 0;
  int64_t clients = 0;
  uint64_t num_examples = 0;
  double loss = 0.0;
  double accuracy = 0.0;
};

// How stale an accepted asynchronous update was (AsyncEngine); none for a synchronous one.
struct UpdateStaleness {
  uint64_t trained_on = 0;  // the model version the client trained from
  uint64_t staleness = 0;   // versions between that one and the current one when it arrived
  double weight = 1.0;      // the staleness weight s(staleness) its delta was multiplied by
};

class RunEngine {
 public:
  struct Outgoing {
    std::string client_id;
    Message message;
  };
  struct Hooks {
    // After every closed round (asynchronous step), with the new model. The driver checkpoints,
    // evaluates and logs here.
    std::function<void(const RoundSummary&, const ModelWeights&)> on_round_complete;
    // After a round attempt fails (too few updates); `reason` says why. Synchronous only.
    std::function<void(uint64_t round, int64_t attempt, const std::string& reason)> on_round_failed;
    // When all results of a federated evaluation are in (or its deadline passed).
    std::function<void(const FederatedEvalSummary&)> on_federated_eval;
    // When a round attempt starts (its selection has been sent its tasks), or an asynchronous
    // step's buffer opens (`selected`: the clients training then).
    std::function<void(uint64_t round, int64_t attempt, int64_t selected)> on_round_opened;
    // When an update is folded in; `staleness` for an asynchronous one; `via` names the
    // aggregator it came through (empty when the client sent it to the coordinator itself).
    std::function<void(const std::string& client_id, uint64_t round, uint64_t num_examples,
                       uint64_t bytes, const std::optional<UpdateStaleness>& staleness,
                       const std::string& via)>
        on_accepted;
    // When an update is refused: who, for which round, and why (already sent to the client as an
    // Error).
    std::function<void(const std::string& client_id, uint64_t round, const Status& why)> on_refused;
  };

  virtual ~RunEngine() = default;

  // `via`: the aggregator of the tier the client joined through; empty when it connected here.
  virtual void OnJoined(const std::string& id, const ClientCapabilities& caps, TimePoint now,
                        const std::string& via = {}) = 0;
  virtual void OnLeft(const std::string& id, TimePoint now) = 0;
  // OK when the update was folded in; otherwise why it was refused.
  virtual Status OnUpdate(const std::string& id, const UpdateSubmission& update, TimePoint now) = 0;
  virtual Status OnEvaluateResult(const std::string& id, const EvaluateResult& result,
                                  TimePoint now) = 0;
  // A secure aggregation message (types 10-16) from a client (config.secagg).
  virtual Status OnSecAgg(const std::string& id, const Message& message, TimePoint now) = 0;
  // A client could not do a task (TaskFailed, protocol version 12). A fit task it holds ends
  // without an update, as if it had left the task (counted as dropped, a miss for its cool-down;
  // with secure aggregation, a dropout of its session), and the round or step goes on without
  // waiting for it; the client stays joined. An evaluation task counts as answered, not in the
  // means. FailedPrecondition, changing nothing, when the sender holds no task `failed` names.
  virtual Status OnTaskFailed(const std::string& id, const TaskFailed& failed, TimePoint now) = 0;
  virtual void OnHeartbeat(const std::string& id, TimePoint now) = 0;
  // A partial sum from an aggregator of the tier (docs/tier.md): `result`'s records, one per
  // client of the aggregator it judged, and `partial`, its decoded exact sum of the accepted ones.
  // The caller has checked that every record names a client that joined through `aggregator`.
  // OK when it was taken (its accepted updates folded as if each had arrived here, its refusals
  // counted as refusals); otherwise why the whole result was refused (a late round, a record of
  // a client not holding a task, a sum that does not add up to its records), and nothing changed.
  virtual Status OnGroupResult(const std::string& aggregator, const GroupResult& result,
                               const PartialSum& partial, TimePoint now) = 0;
  // A group's secure aggregation result (result.secagg_bits != 0; docs/tier.md): the unmasked
  // integer sum of its survivors' inputs, or its session's failure. The caller has checked the
  // records as for OnGroupResult. OK when taken; otherwise why it was refused, and nothing changed.
  virtual Status OnSecureGroupResult(const std::string& aggregator, const GroupResult& result,
                                     TimePoint now) = 0;
  // Starts work and enforces deadlines. Call when next_wakeup() passes, and after other events.
  virtual void OnTick(TimePoint now) = 0;

  virtual std::vector<Outgoing> TakeOutbox() = 0;
  // When OnTick next needs to run, if ever.
  virtual std::optional<TimePoint> next_wakeup() const = 0;

  // Every round (step) is done and the last federated evaluation is in (or past its deadline), or
  // the run failed for good.
  virtual bool finished() const = 0;
  // Non-OK when the run stopped because it could not go on (failure's message says why).
  virtual const Status& failure() const = 0;
  // True when the run stopped before a round that would have spent more than dp.target_epsilon;
  // stop_reason() says so. Such a run ends well: its model is final.
  virtual bool budget_spent() const = 0;
  virtual const std::string& stop_reason() const = 0;
  // The differential privacy mechanism and its accountant (config.dp.enabled), else null.
  virtual const DpAggregator* dp() const = 0;
  virtual DpAggregator* mutable_dp() = 0;

  // Rounds closed (asynchronous: steps taken), counting those before a resume.
  virtual uint64_t rounds_done() const = 0;
  virtual uint64_t model_version() const = 0;
  virtual const ModelWeights& model() const = 0;
  virtual const Strategy& strategy() const = 0;
  virtual const ClientRegistry& registry() const = 0;
  // For a driver that restores what it saved of the registry (the simulator's cool-downs on
  // resume); not for feeding the engine, which goes through the On* calls.
  virtual ClientRegistry& mutable_registry() = 0;
  virtual const RoundConfig& config() const = 0;
  // True while clients hold tasks (a synchronous round attempt is open, or asynchronous tasks
  // are in flight).
  virtual bool round_in_progress() const = 0;
  // Tasks sent since the run started, counting those before a resume (what keys asynchronous fit
  // seeds; the checkpoint keeps it). A synchronous engine counts its assignments.
  virtual uint64_t dispatches() const = 0;
};

}  // namespace tributary
