#include "coordinator/federated_eval.h"

#include <cmath>

namespace tributary {

void FederatedEval::Start(const EvaluateTask& task, const std::vector<std::string>& clients,
                          TimePoint deadline, std::vector<RunEngine::Outgoing>& outbox,
                          const Stamp& stamp) {
  if (eval_.round != 0) Finish();  // an older evaluation still waiting: report what came
  eval_.round = task.round;
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
  if (std::isfinite(res.loss) && std::isfinite(res.accuracy) && res.num_examples > 0) {
    ++eval_.clients;
    eval_.num_examples += res.num_examples;
    loss_sum_ += res.loss * static_cast<double>(res.num_examples);
    correct_sum_ += res.accuracy * static_cast<double>(res.num_examples);
  }
  if (pending_.empty()) Finish();
  return Status::Ok();
}

void FederatedEval::OnLeft(const std::string& id) {
  pending_.erase(id);
  if (pending_.empty() && eval_.round != 0) Finish();
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
