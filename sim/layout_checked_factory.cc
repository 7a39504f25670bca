#include "sim/layout_checked_factory.h"

#include <utility>

namespace tributary {

LayoutCheckedFactory::LayoutCheckedFactory(std::unique_ptr<TrainerFactory> inner,
                                           ModelLayout run_layout)
    : inner_(std::move(inner)), run_layout_(std::move(run_layout)) {}

Result<std::shared_ptr<Trainer>> LayoutCheckedFactory::Make(std::shared_ptr<const Dataset> data,
                                                            int64_t num_examples) const {
  TRIB_ASSIGN_OR_RETURN(std::shared_ptr<Trainer> trainer,
                        inner_->Make(std::move(data), num_examples));
  std::call_once(checked_, [&] { check_ = Check(*trainer); });
  TRIB_RETURN_IF_ERROR(check_);
  return trainer;
}

Status LayoutCheckedFactory::Check(Trainer& trainer) const {
  Result<ModelWeights> params = trainer.get_parameters();
  if (!params.ok()) return params.status().WithContext("the trainer's get_parameters");
  const ModelLayout layout = LayoutOf(*params);
  const std::string diff =
      LayoutDifference(run_layout_, "the run's model", layout, "the trainer's");
  if (diff.empty()) return Status::Ok();
  return Status::InvalidArgument(
      "the trainer's model is not the run's (run.model or run.initial_model): " + diff);
}

}  // namespace tributary
