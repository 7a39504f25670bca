#include "sim/trainer_factory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/noop_trainer.h"
#include "train/native_trainer.h"

namespace tributary {
namespace {

class NativeFactory final : public TrainerFactory {
 public:
  NativeFactory(ModelSpec spec, uint64_t init_seed) : spec_(std::move(spec)), seed_(init_seed) {}
  bool needs_data() const override { return true; }
  Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset> data,
                                        int64_t) const override {
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<NativeTrainer> t,
                          NativeTrainer::Create(spec_, std::move(data), nullptr, seed_));
    return std::shared_ptr<Trainer>(std::move(t));
  }

 private:
  ModelSpec spec_;
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
  Result<std::unique_ptr<TrainerFactory>> (*make)(const ModelSpec& spec, uint64_t init_seed);
};

const Entry kFactories[] = {
    {"native",
     [](const ModelSpec& spec, uint64_t seed) -> Result<std::unique_ptr<TrainerFactory>> {
       return std::unique_ptr<TrainerFactory>(std::make_unique<NativeFactory>(spec, seed));
     }},
    {"noop",
     [](const ModelSpec& spec, uint64_t) -> Result<std::unique_ptr<TrainerFactory>> {
       TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(spec));
       TRIB_ASSIGN_OR_RETURN(ModelWeights zeros, ModelWeights::Create(layout));
       return std::unique_ptr<TrainerFactory>(std::make_unique<NoopFactory>(std::move(zeros)));
     }},
};

}  // namespace

std::vector<std::string> TrainerFactoryNames() {
  std::vector<std::string> out;
  for (const Entry& e : kFactories) out.emplace_back(e.name);
  return out;
}

Result<std::unique_ptr<TrainerFactory>> MakeTrainerFactory(std::string_view name,
                                                           const ModelSpec& spec,
                                                           uint64_t init_seed) {
  for (const Entry& e : kFactories)
    if (name == e.name) return e.make(spec, init_seed);
  return Status::InvalidArgument(fmt::format("key 'sim.trainer' = '{}' is unknown; use {}", name,
                                             fmt::join(TrainerFactoryNames(), " or ")));
}

}  // namespace tributary
