// TaskExecutor checks what a trainer's fit returns before it becomes an update: an update counting
// no examples, or with a non-finite weight, fails the task with an error naming the problem. The
// coordinator refuses such updates anyway, but there the app only learned that too few clients
// remained.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "client/task_executor.h"
#include "protocol/wire.h"
#include "tests/client/fake_trainer.h"

namespace tributary {
namespace {

using testing::FakeTrainer;

// FakeTrainer's fit, then `change` applied to its result.
class Altered final : public Trainer {
 public:
  explicit Altered(std::function<void(FitResult&)> change) : change_(std::move(change)) {}
  Result<ModelWeights> get_parameters() override { return inner_.get_parameters(); }
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override {
    Result<FitResult> r = inner_.fit(global, config);
    if (r.ok()) change_(*r);
    return r;
  }
  Result<EvalResult> evaluate(const ModelWeights& w, const EvalConfig& c) override {
    return inner_.evaluate(w, c);
  }

 private:
  FakeTrainer inner_;
  std::function<void(FitResult&)> change_;
};

TaskAssignment Task() {
  TaskAssignment t;
  t.round = 2;
  t.fit.lr = 0.1f;
  t.fit.epochs = 1;
  t.codec.spec = "dense";
  const ModelWeights global = FakeTrainer::Layout();
  t.model.layout_fingerprint = global.fingerprint();
  t.model.values.mutable_values().assign(global.size(), 0.5f);
  return t;
}

Status FitWith(std::function<void(FitResult&)> change) {
  TaskExecutor exec(std::make_shared<Altered>(std::move(change)));
  return exec.Fit(Task()).status();
}

TEST(FitResultTest, AnUpdateCountingNoExamplesFailsTheTaskSayingSo) {
  EXPECT_TRUE(FitWith([](FitResult&) {}).ok());
  for (int64_t n : {0, -3}) {
    const Status s = FitWith([n](FitResult& r) { r.num_examples = n; });
    EXPECT_EQ(ProtocolErrorCodeOf(s), ErrorCode::kInternal) << s;
    EXPECT_NE(s.message().find("task for round 2: trainer.fit returned num_examples " +
                               std::to_string(n) + ": an update must count the examples"),
              std::string::npos)
        << s;
  }
}

TEST(FitResultTest, ANonFiniteWeightFailsTheTaskNamingTheTensorAndIndex) {
  const Status nan = FitWith([](FitResult& r) {
    r.weights.data()[7] = std::numeric_limits<float>::quiet_NaN();  // fc.bias[1]
  });
  EXPECT_EQ(ProtocolErrorCodeOf(nan), ErrorCode::kInternal) << nan;
  EXPECT_NE(nan.message().find("non-finite value (nan) in tensor 'fc.bias' at index 1"),
            std::string::npos)
      << nan;
  const Status inf =
      FitWith([](FitResult& r) { r.weights.data()[0] = -std::numeric_limits<float>::infinity(); });
  EXPECT_NE(inf.message().find("non-finite value (-inf) in tensor 'fc.weight' at index 0"),
            std::string::npos)
      << inf;
}

}  // namespace
}  // namespace tributary
