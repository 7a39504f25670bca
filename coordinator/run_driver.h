// RunDriver: one federated run, built from its RunConfig, whoever drives it.
//
// The driver owns everything around the round engine, written once for deployment and simulation:
//   - the strategy (MakeStrategy, checked against the round size; a FedProx strategy's mu goes
//     into the clients' fit config);
//   - the starting model: given weights, or run.initial_model (a safetensors file of any layout,
//     which must have run.model's layout when a model is named too), or the model spec's initial
//     weights, or, when resuming, the checkpoint's model, strategy state and round counter,
//     refused with an error that names the first differing tensor when the checkpoint has another
//     layout, and says what differs when it was written for another model or strategy;
//   - the RunEngine that run.mode asks for (run_engine_factory.h: RoundEngine or AsyncEngine);
//   - after every round (asynchronous: step), in this order: the checkpoint (through the Env,
//     every output.checkpoint_every rounds and after the last), server-side evaluation (through
//     the Evaluator, every eval.every rounds);
//   - at the end, the final model (when every round is done);
//   - with run.federate = "unfrozen" and a model that freezes layers (docs/models.md), the
//     tensor subset: the engine's model is the unfrozen tensors alone (what is aggregated and
//     sent), the driver keeps the frozen rest (stamped on the tasks through RoundConfig::frozen),
//     and checkpoints, evaluation, the final model and model() are the whole model;
//   - in a split-learning run (split.mode; docs/split.md), the SplitServer: the engine's model is
//     the device part of the cut model, the SplitServer holds the server part, and checkpoints,
//     evaluation, the final model and model() are the whole model (the two joined). The server
//     part follows the engine's rounds through its hooks (tasks out, updates accepted, rounds
//     closed or failed).
// It publishes what happens as RunEvents (run_events.h) to its observers: the event log, the
// console, the simulator's report, and whatever comes next (metrics, a dashboard).
//
// Drivers of the driver: CoordinatorService feeds engine() from the network in real time, the
// Simulator from virtual clients in simulated time, tests directly. When engine().finished(), or
// to stop early, they call Finish().
//
// Threading: not thread-safe. Every call, and every observer callback, happens on the thread or
// strand that drives the engine.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/checkpoint.h"
#include "coordinator/evaluator.h"
#include "coordinator/run_config.h"
#include "coordinator/run_engine.h"
#include "coordinator/run_events.h"
#include "core/env.h"
#include "core/tensor_subset.h"
#include "protocol/messages.h"
#include "split/split_server.h"
#include "train/model_spec.h"

namespace tributary {

class RunDriver {
 public:
  struct Options {
    // The starting weights: `initial_model` when set, else the file run.initial_model names, else
    // InitWeights(*model_spec, run.init_seed), else the built-in run.model for Fashion-MNIST's
    // shape. The model spec, when there is one, is also what run.initial_model must fit.
    std::optional<ModelWeights> initial_model;
    std::optional<ModelSpec> model_spec;
    Env* env = nullptr;  // null: Env::Default()
    // Server-side evaluation every config.eval_every rounds; null: none.
    std::shared_ptr<Evaluator> evaluator;
    // Continue from the newest good checkpoint in config.checkpoint_dir (damaged newer ones are
    // skipped, with a warning naming each). With no checkpoint at all that is an error, unless
    // start_if_no_checkpoint (then a new run starts).
    bool resume = false;
    bool start_if_no_checkpoint = false;
    // When resuming, what the driver's driver checks of each good checkpoint before it is taken
    // (checkpoint.h's CheckpointCheck: the simulator's state file for the same round).
    CheckpointCheck check_checkpoint;
    std::string producer = "tributary";  // written into the final model's metadata
  };

  // InvalidArgument naming the key for a bad config or strategy; the checkpoint's problem when
  // resuming fails.
  static Result<std::unique_ptr<RunDriver>> Create(const RunConfig& config, Options options);
  ~RunDriver();

  // Observers are not owned and must outlive the driver; add them before Start().
  void AddObserver(RunObserver* observer);
  // Publishes RunStarted. Call once, before feeding the engine.
  void Start();
  // Publishes what its driver saw outside the engine: a client refused at Hello
  // (CoordinatorService, through a RefusalDigest). Only between Start() and Finish(), so that
  // RunStarted stays first and RunFinished last; ignored otherwise.
  void Report(const ClientRefused& refusal);

  RunEngine& engine() { return *engine_; }
  // The run's whole model: the engine's, or in a split run the device part and the server part
  // joined.
  ModelWeights model() const;
  // The model a client trains, the layout it declares at Hello: the device part in a split run,
  // the whole model otherwise (with run.federate = "unfrozen" too, though only the unfrozen
  // tensors travel).
  ModelWeights client_model() const;
  // run.federate = "unfrozen" with a layer frozen: what the engines stamp on tasks (the
  // federated tensors' indices, the frozen rest's hash and values); null otherwise.
  const FrozenPart* frozen() const { return config_.round.frozen.get(); }
  // The server part of a split run (split.mode), else null. Its OnActivations may be called from
  // any thread; its other calls belong to the driver.
  SplitServer* split_server() { return split_.get(); }
  // A split run's engines stamp split_cut on their tasks; the driver's driver tells the server part
  // which clients the outbox's tasks go to (from the engine's strand, before they are sent).
  void NoteTasks(const std::vector<RunEngine::Outgoing>& outbox);
  const RunEngine& engine() const { return *engine_; }
  const RunConfig& config() const { return config_; }
  // The run's unique id: 32 random hex digits made when the run starts, or, when it resumes, its
  // checkpoint's (a checkpoint of an earlier version, which has none, gets a new one). Every
  // checkpoint and RunStarted carry it: it is what tells two runs apart wherever their outputs
  // are (the run history finds a resumed run's record by it).
  const std::string& run_uid() const { return started_.run_uid; }
  Env* env() const { return env_; }

  // Ends the run. `outcome` is OK when the run completed or was stopped, else why it failed (the
  // engine's failure() when it gave up on a round). When every round is done (or the privacy budget
  // stopped the run) the final model is saved (config.final_model); a failure to save it becomes
  // the outcome. Publishes RunFinished and returns the outcome. Only the first call does anything;
  // later ones return its outcome.
  Status Finish(Status outcome);
  bool finished() const { return finished_.has_value(); }

 private:
  RunDriver() = default;
  Status Resume(Strategy& strategy, ModelWeights* model, uint64_t* rounds_done, uint64_t* version);
  // A new run in a checkpoint directory that holds an earlier run's checkpoints moves them to
  // <dir>/previous/ (replacing what was there), so that a --resume of this run can never fall
  // back to another run's model when its own newest checkpoint is damaged.
  Status SetAsidePreviousCheckpoints();
  void Publish(const RunEvent& event);
  void OnRoundComplete(const RoundSummary& summary, const ModelWeights& model);
  // Makes split_ from the model spec and cuts *model to its device part (split.mode).
  Status SetUpSplit(const std::optional<ModelSpec>& spec, ModelWeights* model);
  // run.federate = "unfrozen": makes subset_ from the model spec's frozen layers and cuts *model
  // to the unfrozen tensors (nothing when no layer is frozen).
  Status SetUpFederated(const std::optional<ModelSpec>& spec, ModelWeights* model);
  // The frozen rest `rest` becomes frozen_ and the FrozenPart the engines stamp.
  void SetFrozen(ModelWeights rest);

  RunConfig config_;
  Options options_;
  Env* env_ = nullptr;
  std::unique_ptr<RunEngine> engine_;
  std::unique_ptr<SplitServer> split_;  // split.mode only
  std::optional<TensorSubset> subset_;  // run.federate = "unfrozen" with a layer frozen
  ModelWeights frozen_;                 // with subset_: the frozen rest
  SplitServerStats split_stats_;        // as of the last closed round
  uint64_t dispatches_ = 0;             // the resumed checkpoint's dispatch counter
  std::vector<RunObserver*> observers_;
  RunStarted started_;
  bool running_ = false;  // between Start() and Finish()
  std::optional<Status> finished_;
  std::string privacy_state_;  // the resumed checkpoint's, for the engine's DP accountant
};

}  // namespace tributary
