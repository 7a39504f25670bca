// LayoutCheckedFactory: the embedding program's trainers are checked once against the run's
// model, and a mismatch names the tensor on both sides.
#include "sim/layout_checked_factory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace tributary {
namespace {

// A trainer whose model has the given layout; counts get_parameters calls across all trainers.
class ShapedTrainer final : public Trainer {
 public:
  ShapedTrainer(ModelWeights::LayoutSpec spec, std::atomic<int>* asked)
      : spec_(std::move(spec)), asked_(asked) {}
  Result<ModelWeights> get_parameters() override {
    ++*asked_;
    return ModelWeights::Create(spec_);
  }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig&) override {
    FitResult r;
    r.weights = global;
    r.num_examples = 1;
    return r;
  }
  Result<EvalResult> evaluate(const ModelWeights&, const EvalConfig&) override {
    return EvalResult{};
  }

 private:
  ModelWeights::LayoutSpec spec_;
  std::atomic<int>* asked_;
};

class ShapedTrainerFactory final : public TrainerFactory {
 public:
  explicit ShapedTrainerFactory(ModelWeights::LayoutSpec spec) : spec_(std::move(spec)) {}
  bool needs_data() const override { return false; }
  bool applies_correction() const override { return true; }
  Result<std::shared_ptr<Trainer>> Make(std::shared_ptr<const Dataset>, int64_t) const override {
    ++made;
    return std::shared_ptr<Trainer>(std::make_shared<ShapedTrainer>(spec_, &asked));
  }
  mutable std::atomic<int> made{0};
  mutable std::atomic<int> asked{0};

 private:
  ModelWeights::LayoutSpec spec_;
};

const ModelWeights::LayoutSpec kCheckedRunSpec = {{"enc/0.W", {3, 2}}, {"head:b", {4}}};

ModelLayout CheckedRunLayout() { return LayoutOf(*ModelWeights::Create(kCheckedRunSpec)); }

TEST(LayoutCheckedFactoryTest, TheRunsLayoutPassesAndIsCheckedOnce) {
  auto inner = std::make_unique<ShapedTrainerFactory>(kCheckedRunSpec);
  ShapedTrainerFactory* f = inner.get();
  LayoutCheckedFactory checked(std::move(inner), CheckedRunLayout());
  EXPECT_FALSE(checked.needs_data());
  EXPECT_TRUE(checked.applies_correction());
  for (int i = 0; i < 5; ++i) {
    Result<std::shared_ptr<Trainer>> t = checked.Make(nullptr, 10);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_NE(t->get(), nullptr);
  }
  EXPECT_EQ(f->made.load(), 5);
  EXPECT_EQ(f->asked.load(), 1);  // the check asks the first trainer only
}

TEST(LayoutCheckedFactoryTest, AnotherShapeIsRefusedNamingTheTensorOnBothSides) {
  auto inner = std::make_unique<ShapedTrainerFactory>(
      ModelWeights::LayoutSpec{{"enc/0.W", {2, 3}}, {"head:b", {4}}});
  ShapedTrainerFactory* f = inner.get();
  LayoutCheckedFactory checked(std::move(inner), CheckedRunLayout());
  for (int i = 0; i < 3; ++i) {
    Result<std::shared_ptr<Trainer>> t = checked.Make(nullptr, 10);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(),
              "the trainer's model is not the run's (run.model or run.initial_model): tensor 0 is "
              "'enc/0.W' [3, 2] F32 in the run's model and 'enc/0.W' [2, 3] F32 in the trainer's")
        << "call " << i;
  }
  EXPECT_EQ(f->asked.load(), 1);  // the verdict is kept, not asked again
}

TEST(LayoutCheckedFactoryTest, AnExtraTensorIsNamed) {
  LayoutCheckedFactory checked(std::make_unique<ShapedTrainerFactory>(ModelWeights::LayoutSpec{
                                   {"enc/0.W", {3, 2}}, {"head:b", {4}}, {"surprise", {1}}}),
                               CheckedRunLayout());
  Result<std::shared_ptr<Trainer>> t = checked.Make(nullptr, 10);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("the run's model has 2 tensors; the trainer's has more, "
                                      "starting with tensor 2 'surprise' [1] F32"),
            std::string::npos)
      << t.status().ToString();
}

TEST(LayoutCheckedFactoryTest, PoolThreadsMakingAtOnceCheckOnceAndAllSeeTheVerdict) {
  auto inner = std::make_unique<ShapedTrainerFactory>(ModelWeights::LayoutSpec{{"enc/0.W", {6}}});
  ShapedTrainerFactory* f = inner.get();
  LayoutCheckedFactory checked(std::move(inner), CheckedRunLayout());
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      if (!checked.Make(nullptr, 1).ok()) ++refused;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(refused.load(), 8);
  EXPECT_EQ(f->made.load(), 8);
  EXPECT_EQ(f->asked.load(), 1);
}

}  // namespace
}  // namespace tributary
