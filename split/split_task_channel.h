// SplitTaskChannel: the client's side of one split task's exchange (docs/split.md), without the
// transport: it turns each batch's activations into the SplitActivations to send (numbering the
// batches 0, 1, ... and encoding with the task's split codec) and checks and decodes the
// SplitGradient that answers it. The client runtime sends and waits; a test can loop the
// messages straight to a SplitServer.
//
// Not thread-safe: one fit uses it, batch after batch.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "compression/codec.h"
#include "protocol/messages.h"
#include "tributary/trainer.h"

namespace tributary {

class SplitTaskChannel {
 public:
  // For `task` (its round and split codec) and the device part's layout fingerprint.
  // PROTOCOL_VIOLATION when the task is not a split task or names a codec this build lacks.
  static Result<SplitTaskChannel> Create(const TaskAssignment& task, uint64_t device_fingerprint);

  // The next batch's message.
  Result<SplitActivations> Activations(std::span<const float> activations,
                                       std::span<const uint8_t> labels);
  // The answer to the last Activations (or, U-shaped, to the last HeadGradient): its round and
  // batch must be that one's and its gradient as many values as the activations were (a
  // ProtocolError naming what differs otherwise).
  Result<CutGradient> Gradient(const SplitGradient& answer) const;

  // The U-shaped split (the task's split_head): the next batch's activations, of `samples`
  // samples and without labels; the server part's answer, decoded (its round, batch and sample
  // count must be the batch's, and it must hold `expected` values: the samples times the head's
  // input size); then the head's gradient to send up, with the head's loss and correct count.
  // PROTOCOL_VIOLATION when the task is not U-shaped, or the calls come out of this order.
  Result<SplitActivations> FrontActivations(std::span<const float> activations, uint32_t samples);
  Result<std::vector<float>> Middle(const SplitActivations& answer, size_t expected) const;
  Result<SplitGradient> HeadGradient(std::span<const float> gradient, double loss_sum,
                                     int64_t correct);
  bool u_shaped() const { return head_ != 0; }

 private:
  SplitTaskChannel() = default;
  std::shared_ptr<const Codec> codec_;
  uint64_t round_ = 0;
  uint64_t fingerprint_ = 0;
  uint32_t head_ = 0;  // the task's split_head
  uint64_t next_batch_ = 0;
  size_t last_floats_ = 0;
  uint32_t last_samples_ = 0;
  bool middle_in_ = false;  // U-shaped: the batch in flight's middle output has come
};

}  // namespace tributary
