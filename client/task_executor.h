// TaskExecutor: turns the coordinator's tasks into answers by calling the app's Trainer.
//
//   Fit(TaskAssignment)    global = the task's model in the trainer's own layout (decoded when it
//                          came compressed, so the delta is against the decoded model); new =
//                          fit(global, the task's FitConfig); delta = new - global, encoded with
//                          the codec the task names -> UpdateSubmission{round, task_id,
//                          model_version, num_examples, metrics (the trainer's, plus
//                          fit_seconds), update}.
//   Evaluate(EvaluateTask) evaluate(the task's model) -> EvaluateResult.
//
// The layout comes from trainer.get_parameters(), asked once and cached. Errors are ProtocolError
// statuses (protocol/wire.h), ready to be sent back as an Error message:
//   PROTOCOL_VIOLATION  the task's layout fingerprint or size differs from the trainer's model, it
//                       names a codec this build does not have (the message names it), or its
//                       model is encoded (a compressed download, e.g. "q8") with an encoding this
//                       client does not support or bytes that are not a valid encoding of the
//                       trainer's layout (validated before anything is decoded)
//   INTERNAL            the trainer failed, or returned weights of another layout, a negative
//                       num_examples, or an update the codec could not encode
//   ABORTED             the task's FitConfig::stop was requested by the time fit() returned
//                       (the host no longer wants the result): nothing is encoded, the
//                       error-feedback residual is left as it was; not meant to be sent
// Metrics with non-finite values, over-long names, or past the wire's cap are left out, so one odd
// metric never makes the whole submission unsendable.
//
// Codecs with error feedback (e.g. "topk(0.01)+q8") keep a residual between rounds. The executor
// holds it in memory and, when given the client's ClientState, saves it to the state dir after
// every encode and loads it back on the first fit after a restart. A saved residual of another
// pipeline or model size is dropped (the run changed), and so is an unreadable one (with a
// warning): the residual only improves accuracy, it is never required. A residual that cannot be
// saved is kept in memory, with a warning. The residual is saved when the update is encoded, so a
// crash between encoding and sending loses that one update's contribution.
//
// SCAFFOLD (a task with TaskAssignment::control, the server's control variate c): the executor
// trains with FitConfig::correction = c - c_i, where c_i is the client's own control variate
// (zeros before its first SCAFFOLD fit), then sends control_delta = (global - new) / (K * lr) - c
// (the paper's option II; K = FitResult::steps) and keeps c_i + control_delta as its new c_i. Like
// the residual, c_i lives in memory and, given a ClientState, in the state dir (saved after every
// SCAFFOLD fit whose update was encoded, loaded on the first one after a restart; one of another
// model, or updated on a newer model version than the task's, which is another run's, is dropped
// with a warning). A task whose control variate is not the model's size or not finite is a
// PROTOCOL_VIOLATION; a trainer that does not apply the correction (Trainer::applies_correction)
// or reports no steps fails the task (INTERNAL) rather than train without it.
//
// A run that federates only the model's unfrozen tensors (FrozenPart, run.federate = "unfrozen"):
// the task's model holds the listed tensors, and the executor joins them with the frozen rest,
// which the task carries the first time (checked against its hash, then kept in memory for later
// tasks) and names by hash after that. The update, SCAFFOLD's control variate and its delta, and
// the error-feedback residual then cover only the federated tensors; the trainer still sees the
// whole model (SCAFFOLD's correction is zero on the frozen tensors, which the trainer leaves as
// they are). Indices that are not strictly increasing or past the trainer's tensors, frozen values
// of the wrong size or hash, and a task that names frozen tensors this client does not hold are a
// PROTOCOL_VIOLATION naming what was wrong.
//
// A host that keeps the latest global model (ClientRuntime does, for Client::predict) sets a hook
// that sees every model the executor decoded, before the trainer gets it.
//
// Not thread-safe: call from one thread at a time (the Trainer contract).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "client/client_state.h"
#include "compression/codec.h"
#include "core/tensor_subset.h"
#include "protocol/messages.h"
#include "tributary/client.h"
#include "tributary/trainer.h"

namespace tributary {

class TaskExecutor {
 public:
  // `state` (may be null: the residual then lives in memory only) is not owned and must outlive
  // this executor, or be replaced with set_state(nullptr) before it goes away.
  explicit TaskExecutor(std::shared_ptr<Trainer> trainer, ClientState* state = nullptr);
  void set_state(ClientState* state) { state_ = state; }
  // The trainer's layout when the host already asked get_parameters() (ClientRuntime does, to
  // declare it in Hello): zeros in that layout. Otherwise the first task asks.
  void set_layout(ModelWeights zeros) { layout_ = std::move(zeros); }
  // The error-feedback state as of the last fit (empty before one with such a codec).
  const CodecState& codec_state() const { return codec_state_; }
  // In-memory error-feedback state for a host that keeps it itself (the simulator keeps one per
  // virtual client): set before Fit (it then replaces anything in the state dir), take after.
  void set_codec_state(CodecState state) {
    codec_state_ = std::move(state);
    codec_state_loaded_ = true;
  }
  CodecState take_codec_state() { return std::move(codec_state_); }
  // In-memory SCAFFOLD control variate c_i for a host that keeps it itself (the simulator): set
  // before Fit (it then replaces anything in the state dir; empty means zeros), take after.
  void set_control(std::vector<float> control) {
    control_ = std::move(control);
    control_loaded_ = true;
    control_version_.reset();
  }
  std::vector<float> take_control() { return std::move(control_); }
  // The frozen tensors of a run that federates only the unfrozen ones, as if an earlier task had
  // sent them (FrozenPart::values, with the hash it named): the simulator's virtual clients, whose
  // executors live for one task, keep the run's this way. A task naming another hash is still
  // refused.
  void keep_frozen(uint64_t hash, SharedFloats values) {
    kept_frozen_hash_ = hash;
    kept_frozen_ = std::move(values);
  }
  // Called by Fit and Evaluate with the task's global model once it is decoded (in the trainer's
  // layout), before the trainer is called, on the calling thread. Empty: none (the default).
  using GlobalModelHook =
      std::function<void(const ModelWeights& global, uint64_t round, uint64_t model_version)>;
  void set_on_global_model(GlobalModelHook hook) { on_global_model_ = std::move(hook); }

  // `report` (may be null) receives what happened, for logging. `split`: the channel to the
  // coordinator's server part when the client trains a device part (docs/split.md); the task
  // must then be a split task (TaskAssignment::split_cut), and fit_split trains instead of fit.
  // Either without the other is a PROTOCOL_VIOLATION.
  Result<UpdateSubmission> Fit(const TaskAssignment& task, TaskReport* report = nullptr,
                               SplitExchange* split = nullptr);
  Result<EvaluateResult> Evaluate(const EvaluateTask& task, TaskReport* report = nullptr);

 private:
  // The payload as ModelWeights in the trainer's layout, decoding an encoded one;
  // PROTOCOL_VIOLATION on a mismatch or a malformed encoding.
  Result<ModelWeights> ToWeights(const ModelPayload& payload, const char* what);
  // layout_ from trainer.get_parameters() on first use (INTERNAL when it fails).
  Status EnsureLayout();
  // The whole global model of a task: ToWeights(payload), or, when `frozen` is active, the
  // federated tensors it holds joined with the frozen rest (sent, or kept from an earlier task).
  // *subset is set to the task's tensor subset (null for a whole-model task).
  Result<ModelWeights> ToWholeWeights(const ModelPayload& payload, const FrozenPart& frozen,
                                      const char* what, const TensorSubset** subset);
  // The frozen rest a task names: its values (checked and kept) or the kept copy.
  Result<ModelWeights> FrozenRest(const FrozenPart& frozen, const TensorSubset& subset,
                                  const char* what);

  // The residual for `codec` and a model of n floats: loaded from the state dir on first use,
  // reset when it belongs to another pipeline or size.
  CodecState* PrepareCodecState(const Codec& codec, size_t n);
  // c_i for a model like `global` and a task on `model_version`: loaded from the state dir on
  // first use; zeros when there is none, it belongs to another model, or it was updated on a newer
  // model version than the task's (another run: with a warning).
  std::vector<float>& PrepareControl(const ModelWeights& global, uint64_t model_version);
  // SCAFFOLD's client side of Fit: checks the task's control variate and the trainer, and sets
  // *correction = c - c_i; after the fit, the control delta and the new c_i (saved).
  Status PrepareCorrection(const TaskAssignment& task, const ModelWeights& global,
                           const std::string& what, std::vector<float>* correction);
  Status FinishControl(const TaskAssignment& task, const ModelWeights& global,
                       std::span<const float> trained, int64_t steps, const std::string& what,
                       std::vector<float>* control_delta);
  // c_i += control_delta, saved, once the update is encoded.
  void CommitControl(const TaskAssignment& task, const ModelWeights& global,
                     std::span<const float> control_delta, const std::string& what);

  std::shared_ptr<Trainer> trainer_;
  std::optional<ModelWeights> layout_;  // zeros in the trainer's layout
  ClientState* state_ = nullptr;
  CodecState codec_state_;
  bool codec_state_loaded_ = false;
  std::vector<float> control_;  // c_i; empty: zeros
  bool control_loaded_ = false;
  std::optional<uint64_t> control_version_;  // the model version c_i was last updated on
  GlobalModelHook on_global_model_;
  std::optional<TensorSubset> subset_;  // the last FrozenPart's federated tensors
  uint64_t kept_frozen_hash_ = 0;
  SharedFloats kept_frozen_;  // empty: none kept
};

// A task's model payload as ModelWeights in `layout`'s layout: the raw floats copied, or an
// encoded payload (a compressed download, ModelPayload::encoding "q8") validated completely and
// then decoded. PROTOCOL_VIOLATION (a ProtocolError whose message starts with `what`) when the
// fingerprint or size differs from `layout`, the encoding is not one this client supports, or the
// bytes are not a valid encoding of layout.size() floats. Thread-safe (pure).
Result<ModelWeights> PayloadToWeights(const ModelPayload& payload, const ModelWeights& layout,
                                      std::string_view what);

// The metrics that can travel: finite values, names of 1..kMaxNameBytes bytes, at most kMaxMetrics.
WireMetrics SendableMetrics(const Metrics& metrics);

}  // namespace tributary
