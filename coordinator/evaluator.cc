#include "coordinator/evaluator.h"

#include <cmath>
#include <future>

#include "train/native_trainer.h"

namespace tributary {
namespace {

constexpr int kSlices = 8;  // fixed, so the sums do not depend on the thread count

}  // namespace

ModelEvaluator::~ModelEvaluator() = default;

Result<std::unique_ptr<ModelEvaluator>> ModelEvaluator::Create(const ModelSpec& spec,
                                                               std::shared_ptr<const Dataset> test,
                                                               int batch_size, ThreadPool* pool) {
  if (!test || test->size() == 0)
    return Status::InvalidArgument("server-side evaluation needs a non-empty test set");
  if (batch_size < 1) return Status::InvalidArgument("evaluation batch size must be >= 1");
  std::unique_ptr<ModelEvaluator> e(new ModelEvaluator());
  e->batch_size_ = batch_size;
  e->pool_ = pool;
  const int64_t n = test->size();
  const int slices = static_cast<int>(std::min<int64_t>(kSlices, n));
  for (int i = 0; i < slices; ++i) {
    std::vector<uint32_t> idx;
    for (int64_t j = n * i / slices; j < n * (i + 1) / slices; ++j)
      idx.push_back(static_cast<uint32_t>(j));
    auto slice = std::make_shared<const Dataset>(test->Subset(idx));
    TRIB_ASSIGN_OR_RETURN(std::unique_ptr<NativeTrainer> t,
                          NativeTrainer::Create(spec, nullptr, std::move(slice), 0));
    e->slices_.push_back(std::move(t));
  }
  return e;
}

Result<EvalResult> ModelEvaluator::Evaluate(const ModelWeights& model) {
  std::vector<size_t> all(slices_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return Combine(EvaluateSlices(model, all));
}

std::vector<Result<EvalResult>> ModelEvaluator::EvaluateSlices(const ModelWeights& model,
                                                               const std::vector<size_t>& which) {
  EvalConfig ec;
  ec.batch_size = batch_size_;
  // One result per requested slice: an index out of range is that slot's error.
  auto one = [this, &model, ec](size_t i) -> Result<EvalResult> {
    if (i >= slices_.size())
      return Status::OutOfRange("evaluation slice " + std::to_string(i) + " of " +
                                std::to_string(slices_.size()));
    return slices_[i]->evaluate(model, ec);
  };
  std::vector<Result<EvalResult>> parts;
  if (pool_) {
    std::vector<std::future<Result<EvalResult>>> futures;
    for (size_t i : which) futures.push_back(pool_->Submit([&one, i] { return one(i); }));
    for (auto& f : futures) parts.push_back(f.get());
  } else {
    for (size_t i : which) parts.push_back(one(i));
  }
  return parts;
}

Result<EvalResult> ModelEvaluator::Combine(const std::vector<Result<EvalResult>>& parts) {
  double loss = 0.0, correct = 0.0;
  int64_t n = 0;
  for (const Result<EvalResult>& r : parts) {
    TRIB_RETURN_IF_ERROR(r.status());
    loss += r->loss * static_cast<double>(r->num_examples);
    correct += std::round(r->accuracy * static_cast<double>(r->num_examples));
    n += r->num_examples;
  }
  EvalResult out;
  out.num_examples = n;
  out.loss = n > 0 ? loss / static_cast<double>(n) : 0.0;
  out.accuracy = n > 0 ? correct / static_cast<double>(n) : 0.0;
  return out;
}

}  // namespace tributary
