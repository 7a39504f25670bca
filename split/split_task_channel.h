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
  // The answer to the last Activations: its round and batch must be that one's and its gradient
  // as many values as the activations were (a ProtocolError naming what differs otherwise).
  Result<CutGradient> Gradient(const SplitGradient& answer) const;

 private:
  SplitTaskChannel() = default;
  std::shared_ptr<const Codec> codec_;
  uint64_t round_ = 0;
  uint64_t fingerprint_ = 0;
  uint64_t next_batch_ = 0;
  size_t last_floats_ = 0;
};

}  // namespace tributary
