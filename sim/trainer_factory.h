// TrainerFactory: how the simulator builds a virtual client's Trainer, chosen by sim.trainer.
//
//   "native"  NativeTrainer: the run's model trained with Tributary's CPU engine on the client's
//             examples (the default); needs a model spec (run.model)
//   "noop"    NoopTrainer: returns the global model untouched and needs no examples, to measure the
//             framework's own cost per client-round (selection, messages, codecs, aggregation);
//             works for any layout
//
// MakeTrainerFactory builds one from a table of names; the simulator knows only the interface, so
// an embedding program (the Python bindings) may hand it a factory of its own.
// Make() is const and may be called from several pool threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/dataset.h"
#include "train/model_spec.h"
#include "train/model_split.h"
#include "tributary/trainer.h"

namespace tributary {

class TrainerFactory {
 public:
  virtual ~TrainerFactory() = default;
  // Whether Make needs the client's examples; when not, the simulator does not materialize them.
  virtual bool needs_data() const = 0;
  // Whether its trainers apply SCAFFOLD's correction (Trainer::applies_correction); the
  // simulator refuses run.strategy = "scaffold" at start-up otherwise.
  virtual bool applies_correction() const { return false; }
  // A trainer for a client holding `num_examples` examples (`data` is null when !needs_data()).
  virtual Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset> data,
                                                int64_t num_examples) const = 0;
};

// What a factory is made from: the run's model spec (null when the run has none: run.model is
// empty and the weights come from run.initial_model), its starting weights and run.init_seed.
struct TrainerFactoryContext {
  const ModelSpec* spec = nullptr;
  const ModelWeights* initial = nullptr;  // not null
  uint64_t init_seed = 1;
  // A U-shaped split run: its cut (each device trains `spec`, the front, and the head); null
  // otherwise.
  const SplitModel* split = nullptr;
};

// InvalidArgument naming sim.trainer and listing the known names for an unknown one, or saying
// that it needs a model spec the run does not have.
Result<std::unique_ptr<TrainerFactory>> MakeTrainerFactory(std::string_view name,
                                                           const TrainerFactoryContext& context);
std::vector<std::string> TrainerFactoryNames();

}  // namespace tributary
