// TrainerFactory: how the simulator builds a virtual client's Trainer, chosen by sim.trainer.
//
//   "native"  NativeTrainer: the run's model trained with Tributary's CPU engine on the client's
//             examples (the default)
//   "noop"    NoopTrainer: returns the global model untouched and needs no examples, to measure the
//             framework's own cost per client-round (selection, messages, codecs, aggregation)
//
// MakeTrainerFactory builds one from a table of names; the simulator knows only the interface.
// Make() is const and may be called from several pool threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "train/data/dataset.h"
#include "train/model_spec.h"
#include "tributary/trainer.h"

namespace tributary {

class TrainerFactory {
 public:
  virtual ~TrainerFactory() = default;
  // Whether Make needs the client's examples; when not, the simulator does not materialize them.
  virtual bool needs_data() const = 0;
  // A trainer for a client holding `num_examples` examples (`data` is null when !needs_data()).
  virtual Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset> data,
                                                int64_t num_examples) const = 0;
};

// InvalidArgument naming sim.trainer and listing the known names for an unknown one.
Result<std::unique_ptr<TrainerFactory>> MakeTrainerFactory(std::string_view name,
                                                           const ModelSpec& spec,
                                                           uint64_t init_seed);
std::vector<std::string> TrainerFactoryNames();

}  // namespace tributary
