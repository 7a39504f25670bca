// The argument checks of Engine's split-learning steps (engine.h: ForwardToCut, BackwardFromCut,
// TrainFromCut), shared by every backend so that each refuses the same calls with the same words.
// Each returns OK or the error the engine returns (InvalidArgument naming the size or label that
// does not fit; FailedPrecondition for a call on the wrong part). Thread-safe (pure).
#pragma once

#include <cstdint>
#include <span>

#include "train/data/dataset.h"
#include "train/model_spec.h"
#include "tributary/status.h"

namespace tributary {

// ForwardToCut on an engine of `spec` (a device part: num_classes 0) for batches of up to
// max_batch, whose cut holds cut_numel values per sample.
Status CheckForwardToCut(const ModelSpec& spec, int64_t max_batch, int64_t cut_numel,
                         const Dataset& data, std::span<const uint32_t> batch, size_t acts_size);
// ForwardToCut from activations (a middle part's inputs).
Status CheckForwardFromInputs(const ModelSpec& spec, int64_t max_batch, int64_t cut_numel,
                              size_t inputs_size, size_t acts_size);
// BackwardFromCut after a ForwardToCut of `pending` samples (0: none); with `input_grad_size`
// (the middle part's), that buffer must hold the pending samples' inputs.
Status CheckBackwardFromCut(const ModelSpec& spec, int64_t pending, int64_t cut_numel,
                            size_t grad_size);
Status CheckBackwardFromCut(const ModelSpec& spec, int64_t pending, int64_t cut_numel,
                            size_t grad_size, size_t input_grad_size);
// TrainFromCut on an engine of `spec` (a server part).
Status CheckTrainFromCut(const ModelSpec& spec, int64_t max_batch, std::span<const float> acts,
                         std::span<const uint8_t> labels, size_t grad_size);

}  // namespace tributary
