#include "sim/trainer_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "sim/noop_trainer.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

class NativeFactory final : public TrainerFactory {
 public:
  NativeFactory(ModelSpec spec, std::optional<SplitModel> split, uint64_t init_seed)
      : spec_(std::move(spec)), split_(std::move(split)), seed_(init_seed) {}
  bool needs_data() const override { return true; }
  bool applies_correction() const override { return !split_; }
  Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset> data,
                                        int64_t) const override {
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<NativeTrainer> t,
                          split_ ? NativeTrainer::CreateWithHead(*split_, std::move(data), seed_)
                                 : NativeTrainer::Create(spec_, std::move(data), nullptr, seed_));
    return std::shared_ptr<Trainer>(std::move(t));
  }

 private:
  ModelSpec spec_;
  std::optional<SplitModel> split_;  // a U-shaped split's cut
  uint64_t seed_;
};

class NoopFactory final : public TrainerFactory {
 public:
  explicit NoopFactory(ModelWeights layout) : layout_(std::move(layout)) {}
  bool needs_data() const override { return false; }
  Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset>,
                                        int64_t num_examples) const override {
    return std::shared_ptr<Trainer>(std::make_shared<NoopTrainer>(layout_, num_examples));
  }

 private:
  ModelWeights layout_;
};

struct Entry {
  const char* name;
  Result<std::unique_ptr<TrainerFactory>> (*make)(const TrainerFactoryContext& context);
};

const Entry kFactories[] = {
    {"native",
     [](const TrainerFactoryContext& c) -> Result<std::unique_ptr<TrainerFactory>> {
       if (!c.spec)
         return Status::InvalidArgument(
             "key 'sim.trainer' = 'native' trains run.model with the native engine, but run.model "
             "is empty (the run starts from run.initial_model): name a model the engine can "
             "train, or use sim.trainer = 'noop'");
       return std::unique_ptr<TrainerFactory>(std::make_unique<NativeFactory>(
           *c.spec, c.split ? std::optional<SplitModel>(*c.split) : std::nullopt, c.init_seed));
     }},
    {"noop",
     [](const TrainerFactoryContext& c) -> Result<std::unique_ptr<TrainerFactory>> {
       return std::unique_ptr<TrainerFactory>(
           std::make_unique<NoopFactory>(c.initial->ZerosLike()));
     }},
};

}  // namespace

std::vector<std::string> TrainerFactoryNames() {
  std::vector<std::string> out;
  for (const Entry& e : kFactories) out.emplace_back(e.name);
  return out;
}

Result<std::unique_ptr<TrainerFactory>> MakeTrainerFactory(std::string_view name,
                                                           const TrainerFactoryContext& context) {
  for (const Entry& e : kFactories)
    if (name == e.name) return e.make(context);
  return Status::InvalidArgument(fmt::format("key 'sim.trainer' = '{}' is unknown; use {}", name,
                                             fmt::join(TrainerFactoryNames(), " or ")));
}

}  // namespace tributary
