// TaskExecutor: turns the coordinator's tasks into answers by calling the app's Trainer.
//
//   Fit(TaskAssignment)    global = the task's model in the trainer's own layout; new = fit(global,
//                          the wire FitConfig); delta = new - global, encoded with the codec the
//                          task names -> UpdateSubmission{round, model_version, num_examples,
//                          metrics (the trainer's, plus fit_seconds), update}.
//   Evaluate(EvaluateTask) evaluate(the task's model) -> EvaluateResult.
//
// The layout comes from trainer.get_parameters(), asked once and cached. Errors are ProtocolError
// statuses (protocol/wire.h), ready to be sent back as an Error message:
//   PROTOCOL_VIOLATION  the task's layout fingerprint or size differs from the trainer's model, or
//                       it names a codec this build does not have (the message names it)
//   INTERNAL            the trainer failed, or returned weights of another layout, a negative
//                       num_examples, or an update the codec could not encode
// Metrics with non-finite values, over-long names, or past the wire's cap are left out, so one odd
// metric never makes the whole submission unsendable.
//
// Not thread-safe: call from one thread at a time (the Trainer contract).
#pragma once

#include <memory>
#include <optional>

#include "protocol/messages.h"
#include "tributary/client.h"
#include "tributary/trainer.h"

namespace tributary {

class TaskExecutor {
 public:
  explicit TaskExecutor(std::shared_ptr<Trainer> trainer);

  // `report` (may be null) receives what happened, for logging.
  Result<UpdateSubmission> Fit(const TaskAssignment& task, TaskReport* report = nullptr);
  Result<EvaluateResult> Evaluate(const EvaluateTask& task, TaskReport* report = nullptr);

 private:
  // The payload as ModelWeights in the trainer's layout; PROTOCOL_VIOLATION on a mismatch.
  Result<ModelWeights> ToWeights(const ModelPayload& payload, const char* what);

  std::shared_ptr<Trainer> trainer_;
  std::optional<ModelWeights> layout_;  // zeros in the trainer's layout
};

// FitConfig from its wire form.
FitConfig FromWire(const WireFitConfig& w);
// The metrics that can travel: finite values, names of 1..kMaxNameBytes bytes, at most kMaxMetrics.
WireMetrics SendableMetrics(const Metrics& metrics);

}  // namespace tributary
