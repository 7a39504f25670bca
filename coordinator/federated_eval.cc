#include "coordinator/federated_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tributary {

void FederatedEval::Start(const EvaluateTask& task, const std::vector<std::string>& clients,
                          TimePoint deadline, std::vector<RunEngine::Outgoing>& outbox,
                          const Stamp& stamp) {
  if (eval_.round != 0) Finish();  // an older evaluation still waiting: report what came
  eval_.round = task.round;
  task_max_examples_ = task.max_examples > 0 ? static_cast<uint64_t>(task.max_examples) : 0;
  deadline_ = deadline;
  for (const std::string& id : clients) {
    pending_.insert(id);
    EvaluateTask t = task;  // shares task.model
    if (stamp) stamp(id, t);
    outbox.push_back({id, std::move(t)});
  }
  if (pending_.empty()) Finish();
}

Status FederatedEval::OnResult(const std::string& id, const EvaluateResult& res) {
  if (!pending_.erase(id) || res.round != eval_.round)
    return Status::FailedPrecondition("unexpected evaluation result from " + id);
  const uint64_t cap =
      task_max_examples_ > 0 ? std::min(task_max_examples_, max_num_examples_) : max_num_examples_;
  Status refused = Status::Ok();
  if (res.num_examples > cap)
    refused = Status::InvalidArgument(fmt::format(
        "the evaluation result of client {} for round {} claims {} examples, more than the {} "
        "allowed ({}); not counted",
        id, res.round, res.num_examples, cap,
        cap == task_max_examples_ ? "the task's max_examples" : "run.max_num_examples"));
  else if (std::isfinite(res.accuracy) && (res.accuracy < 0.0 || res.accuracy > 1.0))
    refused = Status::InvalidArgument(
        fmt::format("the evaluation result of client {} for round {} has accuracy {}, outside "
                    "[0, 1]; not counted",
                    id, res.round, res.accuracy));
  if (refused.ok() && std::isfinite(res.loss) && std::isfinite(res.accuracy) &&
      res.num_examples > 0) {
    ++eval_.clients;
    eval_.num_examples += res.num_examples;
    loss_sum_ += res.loss * static_cast<double>(res.num_examples);
    correct_sum_ += res.accuracy * static_cast<double>(res.num_examples);
  }
  if (pending_.empty()) Finish();
  return refused;
}

void FederatedEval::OnLeft(const std::string& id) {
  pending_.erase(id);
  if (pending_.empty() && eval_.round != 0) Finish();
}

Status FederatedEval::OnFailed(const std::string& id, uint64_t round) {
  if (round != eval_.round || !pending_.erase(id))
    return Status::FailedPrecondition(
        fmt::format("it was not asked to evaluate round {}'s model (or has answered)", round));
  if (pending_.empty()) Finish();
  return Status::Ok();
}

void FederatedEval::OnTick(TimePoint now) {
  if (!pending_.empty() && now >= deadline_) Finish();
}

void FederatedEval::Finish() {
  if (eval_.num_examples > 0) {
    eval_.loss = loss_sum_ / static_cast<double>(eval_.num_examples);
    eval_.accuracy = correct_sum_ / static_cast<double>(eval_.num_examples);
  }
  if (on_done_ && eval_.round != 0) on_done_(eval_);
  eval_ = FederatedEvalSummary{};
  pending_.clear();
  loss_sum_ = correct_sum_ = 0.0;
}

}  // namespace tributary
