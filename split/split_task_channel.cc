#include "split/split_task_channel.h"

#include <algorithm>
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
  c.head_ = task.split_head;
  return c;
}

Result<SplitActivations> SplitTaskChannel::Activations(std::span<const float> activations,
                                                       std::span<const uint8_t> labels) {
  if (u_shaped())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "round " + std::to_string(round_) +
                             "'s task is a U-shaped split: its batches go up without labels");
  SplitActivations m;
  m.round = round_;
  m.batch = next_batch_;
  m.samples = static_cast<uint32_t>(labels.size());
  m.labels.assign(labels.begin(), labels.end());
  TRIB_ASSIGN_OR_RETURN(m.activations,
                        EncodeCutTensor(*codec_, activations, fingerprint_, next_batch_));
  ++next_batch_;
  last_floats_ = activations.size();
  return m;
}

Result<SplitActivations> SplitTaskChannel::FrontActivations(std::span<const float> activations,
                                                            uint32_t samples) {
  if (!u_shaped())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "round " + std::to_string(round_) + "'s task is not a U-shaped split");
  SplitActivations m;
  m.round = round_;
  m.batch = next_batch_;
  m.samples = samples;
  TRIB_ASSIGN_OR_RETURN(m.activations,
                        EncodeCutTensor(*codec_, activations, fingerprint_, next_batch_));
  ++next_batch_;
  last_floats_ = activations.size();
  last_samples_ = samples;
  middle_in_ = false;
  return m;
}

Result<std::vector<float>> SplitTaskChannel::Middle(const SplitActivations& answer,
                                                    size_t expected) const {
  if (!u_shaped() || next_batch_ == 0 || middle_in_ || answer.round != round_ ||
      answer.batch + 1 != next_batch_)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "a server part's output for round " + std::to_string(answer.round) +
                             " batch " + std::to_string(answer.batch) +
                             " answers no batch in flight");
  if (answer.samples != last_samples_ || !answer.labels.empty())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "the server part's output of batch " + std::to_string(answer.batch) +
                             " holds " + std::to_string(answer.samples) + " samples and " +
                             std::to_string(answer.labels.size()) + " labels; it was sent " +
                             std::to_string(last_samples_) + " samples and no labels");
  return DecodeCutTensor(*codec_, answer.activations, fingerprint_, expected,
                         "the server part's output of batch " + std::to_string(answer.batch));
}

Result<SplitGradient> SplitTaskChannel::HeadGradient(std::span<const float> gradient,
                                                     double loss_sum, int64_t correct) {
  if (!u_shaped() || next_batch_ == 0 || middle_in_)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         "a head gradient with no server part's output to answer");
  SplitGradient g;
  g.round = round_;
  g.batch = next_batch_ - 1;
  g.loss_sum = loss_sum;
  g.correct = static_cast<uint64_t>(std::max<int64_t>(0, correct));
  // Its own rounding seed (q8's stochastic rounding), not the batch's activations'.
  TRIB_ASSIGN_OR_RETURN(
      g.gradient, EncodeCutTensor(*codec_, gradient, fingerprint_, g.batch | (uint64_t{1} << 63)));
  middle_in_ = true;
  return g;
}

Result<CutGradient> SplitTaskChannel::Gradient(const SplitGradient& answer) const {
  if (next_batch_ == 0 || answer.round != round_ || answer.batch + 1 != next_batch_ ||
      (u_shaped() && !middle_in_))
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
