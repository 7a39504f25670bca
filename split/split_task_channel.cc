#include "split/split_task_channel.h"

#include <string>

#include "protocol/wire.h"
#include "split/cut_tensor.h"

namespace tributary {

Result<SplitTaskChannel> SplitTaskChannel::Create(const TaskAssignment& task,
                                                  uint64_t device_fingerprint) {
  if (task.split_cut == 0)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "round " + std::to_string(task.round) + "'s task is not a split task");
  Result<std::unique_ptr<Codec>> codec = MakeCodec(task.split_codec.spec);
  if (!codec.ok())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "the task's split codec: " + codec.status().message());
  SplitTaskChannel c;
  c.codec_ = std::move(*codec);
  c.round_ = task.round;
  c.fingerprint_ = device_fingerprint;
  return c;
}

Result<SplitActivations> SplitTaskChannel::Activations(std::span<const float> activations,
                                                       std::span<const uint8_t> labels) {
  SplitActivations m;
  m.round = round_;
  m.batch = next_batch_;
  m.labels.assign(labels.begin(), labels.end());
  TRIB_ASSIGN_OR_RETURN(m.activations,
                        EncodeCutTensor(*codec_, activations, fingerprint_, next_batch_));
  ++next_batch_;
  last_floats_ = activations.size();
  return m;
}

Result<CutGradient> SplitTaskChannel::Gradient(const SplitGradient& answer) const {
  if (next_batch_ == 0 || answer.round != round_ || answer.batch + 1 != next_batch_)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "a gradient for round " + std::to_string(answer.round) + " batch " +
                             std::to_string(answer.batch) + " answers no batch in flight");
  CutGradient g;
  TRIB_ASSIGN_OR_RETURN(g.gradient,
                        DecodeCutTensor(*codec_, answer.gradient, fingerprint_, last_floats_,
                                        "the gradient of batch " + std::to_string(answer.batch)));
  g.loss_sum = answer.loss_sum;
  g.correct = static_cast<int64_t>(answer.correct);
  return g;
}

}  // namespace tributary
