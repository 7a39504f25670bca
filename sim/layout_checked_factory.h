// LayoutCheckedFactory: wraps a TrainerFactory that the simulator did not build from the run's
// model (an embedding program's, such as tb.simulate's Python trainers), and checks once, on the
// first trainer it makes, that the trainer's model (get_parameters) has the run's tensors: names,
// shapes, dtypes and order. A mismatch is an InvalidArgument naming the first tensor that differs
// on both sides (LayoutDifference), returned by that Make and by every later one, so the run
// fails before any client trains, instead of every client failing on a fingerprint.
// Make() may be called from several pool threads at once, as TrainerFactory's contract says; the
// check runs on one of them and the others wait for its result.
#pragma once

#include <memory>
#include <mutex>

#include "core/model_layout.h"
#include "sim/trainer_factory.h"

namespace tributary {

class LayoutCheckedFactory final : public TrainerFactory {
 public:
  // `run_layout` is the model each virtual client trains (RunDriver::client_model()).
  LayoutCheckedFactory(std::unique_ptr<TrainerFactory> inner, ModelLayout run_layout);

  bool needs_data() const override { return inner_->needs_data(); }
  bool applies_correction() const override { return inner_->applies_correction(); }
  Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset> data,
                                        int64_t num_examples) const override;

 private:
  Status Check(Trainer& trainer) const;

  std::unique_ptr<TrainerFactory> inner_;
  ModelLayout run_layout_;
  mutable std::once_flag checked_;
  mutable Status check_;  // written once under checked_
};

}  // namespace tributary
