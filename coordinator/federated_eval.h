// FederatedEval: asking the idle clients to evaluate a new model, and weighing what they answer.
//
// Start sends an EvaluateTask with the model (one shared payload) to every client it is given and
// waits; each EvaluateResult is weighted by its num_examples (results that are not finite, or of
// no examples, count as answers but not in the means). A result that claims more examples than
// the task's max_examples (when set) or `max_num_examples` (run.max_num_examples), or an accuracy
// outside [0, 1], is refused (InvalidArgument naming the client): it counts as an answer, not in
// the means, so one client cannot own the metric. The evaluation is reported (`on_done`)
// when every client has answered or left, or at its deadline with the results that came; a new
// Start first reports one still waiting. Both engines use it (eval.federated_every), the
// synchronous after every k-th round, the asynchronous after every k-th step.
//
// Not thread-safe (one engine's).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/run_engine.h"

namespace tributary {

class FederatedEval {
 public:
  FederatedEval(std::function<void(const FederatedEvalSummary&)> on_done, uint64_t max_num_examples)
      : on_done_(std::move(on_done)), max_num_examples_(max_num_examples) {}

  // Sends `task` (its round, version, deadline and model set) to each of `clients` through
  // `outbox`, each copy passed through `stamp` when given (run.federate = "unfrozen": the frozen
  // tensors for a client not yet sent them); with no clients the evaluation is reported at once,
  // empty.
  using Stamp = std::function<void(const std::string& client, EvaluateTask& task)>;
  void Start(const EvaluateTask& task, const std::vector<std::string>& clients, TimePoint deadline,
             std::vector<RunEngine::Outgoing>& outbox, const Stamp& stamp = {});
  // FailedPrecondition when `id` was not asked, or answers another round; InvalidArgument when the
  // result is out of bounds (above).
  Status OnResult(const std::string& id, const EvaluateResult& result);
  void OnLeft(const std::string& id);
  // `id` could not evaluate round `round`'s model (TaskFailed): answered, not in the means.
  // FailedPrecondition, changing nothing, when it was not asked or `round` is not the evaluation's.
  Status OnFailed(const std::string& id, uint64_t round);
  // Reports the evaluation when its deadline has passed.
  void OnTick(TimePoint now);

  // Waiting for answers.
  bool pending() const { return !pending_.empty(); }
  std::optional<TimePoint> deadline() const {
    return pending_.empty() ? std::nullopt : std::optional<TimePoint>(deadline_);
  }

 private:
  void Finish();

  std::function<void(const FederatedEvalSummary&)> on_done_;
  uint64_t max_num_examples_;
  uint64_t task_max_examples_ = 0;  // the evaluation's EvaluateTask::max_examples (0: none)
  std::set<std::string> pending_;
  TimePoint deadline_{};
  FederatedEvalSummary eval_;
  double loss_sum_ = 0.0, correct_sum_ = 0.0;
};

}  // namespace tributary
