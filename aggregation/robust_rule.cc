#include "aggregation/robust_rule.h"

#include <cmath>
#include <thread>
#include <vector>

namespace tributary {

RobustRule::RobustRule(std::string name, const RobustOptions& options)
    : name_(std::move(name)), buffer_(name_, options.max_buffer_bytes) {
  size_t threads = options.threads;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // ParallelFor also runs work on the calling thread, so the pool needs one thread fewer.
  if (threads > 1) pool_ = std::make_unique<ThreadPool>(threads - 1);
}

Status RobustRule::BeginRound(const ModelWeights& global) {
  global_ = global;
  buffer_.Reset(global.size());
  begun_ = true;
  return Status::Ok();
}

Status RobustRule::Accumulate(uint64_t weight, const UpdateWriter& writer) {
  if (!begun_) return Status::FailedPrecondition(name_ + ": Accumulate before BeginRound");
  if (weight < 1) return Status::InvalidArgument(name_ + ": update weight must be at least 1");
  TRIB_ASSIGN_OR_RETURN(std::span<float> row, buffer_.Append());
  BufferSink sink(row);
  writer(sink, 1.0f);
  for (float v : row) {
    if (!std::isfinite(v)) {
      buffer_.PopBack();
      return Status::InvalidArgument(name_ + ": update has a non-finite value");
    }
  }
  return Status::Ok();
}

Status RobustRule::CheckRoundSize(int64_t n) const {
  if (n < MinUpdates())
    return Status::InvalidArgument(name_ + " needs " + Requirement() + " updates per round; got " +
                                   std::to_string(n));
  return Status::Ok();
}

Result<ModelWeights> RobustRule::Finalize() {
  if (!begun_ || buffer_.size() == 0)
    return Status::FailedPrecondition(name_ + ": no updates to aggregate");
  const int64_t n = static_cast<int64_t>(buffer_.size());
  if (n < MinUpdates())
    return Status::FailedPrecondition(name_ + ": the round has " + std::to_string(n) +
                                      " updates; the rule needs " + Requirement());
  std::vector<float> delta(buffer_.dim());
  Aggregate(delta);
  ModelWeights next = global_;
  std::span<float> w = next.data();
  for (size_t i = 0; i < w.size(); ++i) w[i] += delta[i];
  begun_ = false;
  return next;
}

void RobustRule::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (pool_) {
    pool_->ParallelFor(0, n, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
}

}  // namespace tributary
