#include "train/split_checks.h"

#include <string>

namespace tributary {
namespace {

Status BatchInRange(int64_t n, int64_t max_batch) {
  if (n < 1 || n > max_batch)
    return Status::InvalidArgument("a batch of " + std::to_string(n) + " samples is outside [1, " +
                                   std::to_string(max_batch) + "]");
  return Status::Ok();
}

// The activations buffer of a forward to the cut holds n samples' values at it.
Status ActsFit(size_t acts_size, int64_t n, int64_t cut_numel) {
  if (static_cast<int64_t>(acts_size) != n * cut_numel)
    return Status::InvalidArgument("the activations buffer holds " + std::to_string(acts_size) +
                                   " values; " + std::to_string(n) + " samples at the cut need " +
                                   std::to_string(n * cut_numel));
  return Status::Ok();
}

}  // namespace

Status CheckForwardToCut(const ModelSpec& spec, int64_t max_batch, int64_t cut_numel,
                         const Dataset& data, std::span<const uint32_t> batch, size_t acts_size) {
  if (spec.num_classes != 0)
    return Status::FailedPrecondition("model " + spec.name +
                                      " is not a device part: it has no cut to run to");
  const int64_t n = static_cast<int64_t>(batch.size());
  TRIB_RETURN_IF_ERROR(BatchInRange(n, max_batch));
  if (data.sample_size() != spec.input.numel())
    return Status::InvalidArgument("the data's samples hold " + std::to_string(data.sample_size()) +
                                   " values; model " + spec.name + " takes " +
                                   std::to_string(spec.input.numel()));
  for (uint32_t i : batch)
    if (i >= data.labels.size())
      return Status::InvalidArgument("sample index " + std::to_string(i) + " is past the data's " +
                                     std::to_string(data.labels.size()) + " samples");
  return ActsFit(acts_size, n, cut_numel);
}

Status CheckBackwardFromCut(const ModelSpec& spec, int64_t pending, int64_t cut_numel,
                            size_t grad_size) {
  if (spec.num_classes != 0)
    return Status::FailedPrecondition("model " + spec.name +
                                      " is not a device part: it has no cut to run back from");
  if (pending == 0)
    return Status::FailedPrecondition("BackwardFromCut without a ForwardToCut before it");
  if (static_cast<int64_t>(grad_size) != pending * cut_numel)
    return Status::InvalidArgument("the gradient at the cut holds " + std::to_string(grad_size) +
                                   " values; the batch of " + std::to_string(pending) + " needs " +
                                   std::to_string(pending * cut_numel));
  return Status::Ok();
}

Status CheckForwardFromInputs(const ModelSpec& spec, int64_t max_batch, int64_t cut_numel,
                              size_t inputs_size, size_t acts_size) {
  if (spec.num_classes != 0)
    return Status::FailedPrecondition("model " + spec.name +
                                      " is not a middle part: it has no cut to run to");
  const int64_t ss = spec.input.numel();
  if (inputs_size == 0 || static_cast<int64_t>(inputs_size) % ss != 0)
    return Status::InvalidArgument("the inputs hold " + std::to_string(inputs_size) +
                                   " values, not a whole number of samples of " +
                                   std::to_string(ss) + " (model " + spec.name + ")");
  const int64_t n = static_cast<int64_t>(inputs_size) / ss;
  TRIB_RETURN_IF_ERROR(BatchInRange(n, max_batch));
  return ActsFit(acts_size, n, cut_numel);
}

Status CheckBackwardFromCut(const ModelSpec& spec, int64_t pending, int64_t cut_numel,
                            size_t grad_size, size_t input_grad_size) {
  TRIB_RETURN_IF_ERROR(CheckBackwardFromCut(spec, pending, cut_numel, grad_size));
  if (static_cast<int64_t>(input_grad_size) != pending * spec.input.numel())
    return Status::InvalidArgument("the input gradient buffer holds " +
                                   std::to_string(input_grad_size) + " values; the batch of " +
                                   std::to_string(pending) + " inputs needs " +
                                   std::to_string(pending * spec.input.numel()));
  return Status::Ok();
}

Status CheckTrainFromCut(const ModelSpec& spec, int64_t max_batch, std::span<const float> acts,
                         std::span<const uint8_t> labels, size_t grad_size) {
  if (spec.num_classes == 0)
    return Status::FailedPrecondition("model " + spec.name +
                                      " is a device part: it has no loss to train from a cut");
  const int64_t n = static_cast<int64_t>(labels.size());
  const int64_t ss = spec.input.numel();
  TRIB_RETURN_IF_ERROR(BatchInRange(n, max_batch));
  if (static_cast<int64_t>(acts.size()) != n * ss)
    return Status::InvalidArgument(
        "the activations hold " + std::to_string(acts.size()) + " values; " + std::to_string(n) +
        " samples of " + std::to_string(ss) + " at the cut are " + std::to_string(n * ss));
  if (grad_size != acts.size())
    return Status::InvalidArgument("the gradient buffer holds " + std::to_string(grad_size) +
                                   " values, not the activations' " + std::to_string(acts.size()));
  for (int64_t i = 0; i < n; ++i)
    if (labels[i] >= spec.num_classes)
      return Status::InvalidArgument("label " + std::to_string(labels[i]) + " of sample " +
                                     std::to_string(i) + " is not below the model's " +
                                     std::to_string(spec.num_classes) + " classes");
  return Status::Ok();
}

}  // namespace tributary
