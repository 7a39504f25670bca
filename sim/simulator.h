// Simulator: many virtual clients in one process, driving the real coordinator and client code.
//
// The coordinator side is the real RunDriver (sim_config.h's EffectiveRun: strategy, RoundEngine
// with its selection, deadlines and validation, server-side evaluation, the final model), exactly
// what tributary-coordinator runs. The client side is the real TaskExecutor — the code inside
// ClientRuntime and tributary-client that turns a TaskAssignment into an UpdateSubmission (fit
// through the Trainer, delta, codec). Every update travels through the wire format: it is encoded
// into frames (EncodeOutbound, the transport's own encoder), the frame bytes are what "bytes up"
// counts, and the coordinator receives what DecodeMessageBody — the hostile-input decoder — makes
// of them. The model download is encoded the same way, once per round attempt.
//
// Time is simulated. A round attempt starts at simulated time t0; each selected client's finish
// time comes from the DeviceModel (download, compute at its speed, upload at its bandwidth), its
// availability and dropout draws. Events are fed to the engine in simulated-time order, so the
// engine's deadline judges stragglers in simulated time, over-selection absorbs dropouts, and a
// failed attempt is retried by the engine. Real wall time is measured too.
//
// With secure aggregation (secagg.enabled) each virtual client takes part as a deployed one does
// (in an asynchronous run, in the cohort the engine dispatched it with):
// its SecAggTask (client/secagg_task.h) signs its keys with a certificate of the run's in-memory
// CA (SimIdentities), and every message of the protocol travels through the wire format both ways
// and is counted. The key phases and unmasking take no simulated time (their compute is measured
// in wall time and reported); the masked input is sent when the client's update would have been.
//
// Virtual clients' trainers come from a TrainerFactory (sim.trainer) and malicious clients' from
// an Attack (attack.*); the simulator knows only those interfaces. Only the clients selected for
// an attempt are materialized (their examples copied, a Trainer built); training runs on a thread
// pool over every core. Results are deterministic: the same config gives bitwise the same models
// whatever the thread count (per-client seeds come from the engine, events are ordered by
// (simulated time, client), and FedAvg's fixed-point accumulator does not depend on order).
//
// With tier.aggregators, the clients join through simulated aggregators that run the real
// GroupShare over their groups and send the coordinator partial sums (sim/sim_tier.h).
//
// Not thread-safe: call Run from one thread. Observers added with AddObserver see the run's events
// on that thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/run_driver.h"
#include "core/thread_pool.h"
#include "sim/attack.h"
#include "sim/control_store.h"
#include "sim/device_model.h"
#include "sim/population.h"
#include "sim/rank_link.h"
#include "sim/rank_work.h"
#include "sim/residual_store.h"
#include "sim/sim_checkpoint.h"
#include "sim/sim_config.h"
#include "sim/sim_identities.h"
#include "sim/sim_result.h"
#include "sim/sim_tier.h"
#include "sim/trainer_factory.h"
#include "train/data/data_config.h"
#include "train/model_spec.h"

namespace tributary {

class Simulator : private RunObserver {
 public:
  // Validates the config and builds the population, the run's driver and its evaluator. `data`
  // holds the training split (partitioned among the clients) and, for server-side evaluation, the
  // test split; it is shared. run.model is a built-in model or a model file, resolved for the
  // data's shape; it may be empty when run.initial_model gives the weights (then there is no
  // server-side evaluation, and the clients' trainers must work for any layout). With
  // `final_model` set, the run's final model is saved there (through `env`; null: the real file
  // system). `trainers`, when given, builds the clients' trainers instead of sim.trainer's.
  static Result<std::unique_ptr<Simulator>> Create(
      const SimConfig& config, DataSplits data, const std::string& final_model = "",
      Env* env = nullptr, std::unique_ptr<TrainerFactory> trainers = nullptr);
  ~Simulator() override;

  // A distributed simulation (sim/rank_link.h; not owned, outlives the simulator): on rank 0, Run
  // trains each batch of jobs over the ranks; every other rank calls Serve instead of Run. Every
  // rank's simulator is made from the same config and data. Every mode distributes: with secure
  // aggregation the clients' key phases and masking stay on rank 0 (their secrets with them) and
  // only the training goes to the ranks. Before Join or Run.
  Status SetRanks(RankLink* ranks);
  // Another rank's part: says hello to rank 0, then trains the jobs rank 0 sends until it says
  // stop. Errors: the link's, or malformed work.
  Status Serve();

  // Observers of the run's events (the event log, ...); not owned. Before Run().
  void AddObserver(RunObserver* observer) { driver_->AddObserver(observer); }
  // Starts the run (RunStarted) and registers every client with the engine (timed separately;
  // see SimResult::join_seconds). Past a second, logs its progress (core/progress.h).
  Status Join();
  // Runs every round (calls Join first if needed), then finishes the run (the final model is
  // saved). `on_round` sees each closed round at once.
  Result<SimResult> Run(const std::function<void(const SimRound&)>& on_round = {});
  // Once `*flag` is true (set from any thread, or a signal handler; not owned, it outlives Run), a
  // Run in progress stops when the round attempt (asynchronous: the batch of training) in progress
  // is over: it finishes the run as stopped (its checkpoints stay, for --resume) and returns
  // Aborted saying after which round it stopped. tributary-sim's SIGINT and tb.simulate's Ctrl-C.
  void StopWhen(const std::atomic<bool>* flag) { stop_flag_ = flag; }

  const Population& population() const { return *population_; }
  const RunEngine& engine() const { return driver_->engine(); }
  // The run's model spec; none when run.model is empty.
  const std::optional<ModelSpec>& spec() const { return spec_; }
  const SimConfig& config() const { return config_; }
  double join_seconds() const { return result_.join_seconds; }
  const ResidualStore& residuals() const { return *residuals_; }
  const ControlStore& controls() const { return *controls_; }

 private:
  struct Job;
  struct Flight;  // an asynchronous task in simulated time (simulator_async.cc)
  Simulator() = default;
  void OnEvent(const RunEvent& event) override;
  Status RunAttempt(std::vector<RunEngine::Outgoing> tasks,
                    std::map<std::string, SecAggStartMsg> starts);
  void RunJob(Job& job, uint64_t bytes_down) const;
  // With secure aggregation: the job's update masked by its client's SecAggTask (which lives on
  // rank 0 in a distributed simulation: the other ranks train, rank 0 masks what they return),
  // through the wire; or abandoned when its asynchronous cohort ended first.
  void MaskJob(Job& job, UpdateSubmission sub, uint64_t bytes_down) const;
  // Trains `jobs` (job i's download was bytes_down[i] framed bytes): on the pool, or, in a
  // distributed simulation, over the ranks (simulator_ranks.cc). Errors: the link's; a job's own
  // error is in the job.
  Status TrainJobs(const std::vector<Job*>& jobs, const std::vector<uint64_t>& bytes_down);
  // The same on this rank's pool.
  Status TrainJobsHere(const std::vector<Job*>& jobs, const std::vector<uint64_t>& bytes_down);
  // Rank 0: every other rank's hello checked against this rank's data (once).
  Status GreetRanks();
  // Rank 0: every other rank told to stop (once).
  void StopRanks();
  // What every rank must agree on: the population, the data's shape, the model and the seeds.
  uint64_t Fingerprint() const;
  // The run's server-side evaluation (the driver's evaluator): in a distributed simulation, the
  // evaluator's slices spread over the ranks and combined here in slice order.
  class RanksEvaluator;
  static std::shared_ptr<Evaluator> MakeRanksEvaluator(Simulator* sim);
  Result<EvalResult> Evaluate(const ModelWeights& model);
  // Rank 0: an exchange with the ranks took `wall` seconds, rank r's part busy[r].
  void NoteExchange(double wall, const std::vector<double>& busy);
  // Another rank's part of an evaluation: `work`'s slices of `work`'s model.
  std::vector<RankSliceResult> EvaluateHere(const RankWork& work);
  TaskTiming TimeJob(const Job& job, uint64_t bytes_down, uint64_t bytes_up, double samples) const;
  // run.mode = "async": the discrete-event loop in simulated time (simulator_async.cc).
  Status RunAsync();
  // The run's RoundClosed seen: the round (step) recorded, on_round told.
  void RecordRound();
  // After an attempt whose round's checkpoint was written: the simulator's part of it
  // (sim/sim_checkpoint.h). A failure is logged; the run goes on.
  void SaveState();
  // Resuming: the simulator's state of the checkpoint's round put back (before Join).
  Status Restore(SimCheckpoint state);
  // sim.stop_at_target, and the target reached: the run ends here.
  bool AtTarget() const;
  // StopWhen's flag is set (logged once, at the first check that sees it).
  bool StopRequested();
  const std::atomic<bool>* stop_flag_ = nullptr;
  bool stop_logged_ = false;
  double Samples(uint64_t client, const TaskAssignment& task) const;
  // Secure aggregation (secagg.enabled): the attempt's unreachable clients leave, the others
  // advertise their keys (through the wire), and the key phases are served.
  Status StartSecAgg(std::vector<Job>& jobs, const std::map<std::string, SecAggStartMsg>& starts,
                     uint64_t bytes_down, std::vector<std::string>& departed);
  // One client's part begins: its SecAggStart through the wire, its SecAggTask, its keys to the
  // engine.
  Status JoinSecAgg(Job& job, const SecAggStartMsg& start);
  // Delivers the engine's secure aggregation messages (rosters, inboxes, unmask requests) to the
  // attempt's clients still there and feeds their answers back at the current simulated time,
  // until the engine has nothing more for them. Messages of a later attempt go to carry_.
  Status ServeSecAgg();
  // One secure aggregation message of the engine's delivered to its client (nothing when the
  // client has no part), and the answer fed back.
  Status ReplySecAgg(const RunEngine::Outgoing& o);
  // One client's secure aggregation message, through the wire, to the engine.
  Status Answer(const std::string& id, Message reply, uint64_t index);
  // The attempt's malicious clients counted, and the attack prepared (ALIE's honest fits).
  Status PrepareAttack(const std::vector<RunEngine::Outgoing>& tasks);
  bool Malicious(uint64_t client) const;
  // The client's trainer: the factory's, with the attack's data and trainer wrapping when the
  // client is malicious.
  Result<std::shared_ptr<Trainer>> MakeTrainer(uint64_t client, bool attacked) const;
  // Round trips of a split batch: 2 in a U-shaped split (the server part's output comes down and
  // the head's gradient goes up before the gradient at the cut comes down), 1 otherwise.
  uint64_t SplitRoundTrips() const;
  TimePoint At(double seconds) const;
  // The aggregator client `index` joins through (tier.aggregators); empty without a tier.
  std::string Via(uint64_t index) const;
  // Through a simulated tier: the aggregators' counts since the last call, into pending_.
  void NoteTier();

  SimConfig config_;
  DataSplits data_;
  std::optional<ModelSpec> spec_;
  std::unique_ptr<Population> population_;
  std::optional<DeviceModel> devices_;
  // The share of a training step's FLOPs a device computes: 1, or the device part's in a split run.
  double device_share_ = 1.0;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<RunDriver> driver_;
  std::unique_ptr<TrainerFactory> trainers_;
  std::unique_ptr<Attack> attack_;  // null: no attack
  std::unique_ptr<ResidualStore> residuals_;
  std::unique_ptr<ControlStore> controls_;     // SCAFFOLD's c_i
  std::unique_ptr<SimIdentities> identities_;  // with secagg.enabled
  std::unique_ptr<SimTier> tier_;              // with tier.aggregators > 0
  std::shared_ptr<ModelEvaluator> evaluator_;  // with server-side evaluation
  RankLink* ranks_ = nullptr;                  // null: one process
  bool ranks_greeted_ = false, ranks_stopped_ = false;
  bool sflv2_noted_ = false;  // the log line that SFLV2 trains on rank 0, said once
  ClientCapabilities caps_;
  bool joined_ = false;

  // Run state.
  double now_ = 0.0;  // simulated seconds
  double wall_start_ = 0.0;
  // Wall seconds the rounds before a resume took (the last restored round's wall_clock): the
  // resumed run's wall clock and total go on from there, as its simulated clock does.
  double wall_before_ = 0.0;
  SimRound pending_;  // counts for the round in progress (across attempts)
  double round_start_sim_ = 0.0, round_start_wall_ = 0.0;
  uint64_t attempt_round_ = 0;
  int64_t attempt_ = 0;
  bool round_closed_ = false;          // set by the run's events during an attempt
  std::optional<uint64_t> state_due_;  // a checkpoint of this round was written in the attempt
  std::vector<uint64_t> state_kept_;   // the rounds whose simulator state files are kept
  bool attempt_failed_ = false;
  SimResult result_;
  std::map<std::string, std::shared_ptr<SecAggTask>> secagg_;  // the attempt's, clients still there
  std::vector<RunEngine::Outgoing> carry_;  // the engine's messages for the next attempt
  const std::function<void(const SimRound&)>* on_round_ = nullptr;
};

}  // namespace tributary
