// RobustRule: the base of the Byzantine-robust rules that need every update of a round at once
// (coordinate-wise median and trimmed mean, Krum, Multi-Krum, Bulyan).
//
// NOT streaming: each accepted update is written densely (unweighted, writer(sink, 1)) into an
// UpdateBuffer, so a round holds clients_per_round * model_size * 4 bytes. That memory is bound by
// max_buffer_bytes; the update that would exceed it is refused with ResourceExhausted (the
// coordinator rejects that one update; the round goes on with the rest). Aggregation weights
// (num_examples, which a client reports itself) are deliberately ignored: a Byzantine client could
// inflate them.
//
// An update with a non-finite value is refused with InvalidArgument. Finalize returns
// FailedPrecondition when fewer updates arrived than the rule needs (MinUpdates).
//
// Finalize may use `threads` threads (0: one per core) for its per-coordinate work. Not
// thread-safe otherwise.
#pragma once

#include <memory>
#include <string>

#include "aggregation/strategy.h"
#include "aggregation/update_buffer.h"
#include "core/thread_pool.h"

namespace tributary {

struct RobustOptions {
  size_t max_buffer_bytes = size_t{2} << 30;  // 2 GiB
  size_t threads = 0;                         // 0: std::thread::hardware_concurrency()
};

class RobustRule : public Strategy {
 public:
  std::string needs_each_update() const override {
    return std::string(name()) + " compares the clients' updates with each other";
  }
  RobustRule(std::string name, const RobustOptions& options);

  std::string_view name() const override { return name_; }
  Status BeginRound(const ModelWeights& global) override;
  Status Accumulate(uint64_t weight, const UpdateWriter& writer) override;
  size_t num_accumulated() const override { return buffer_.size(); }
  Result<ModelWeights> Finalize() override;
  Status CheckRoundSize(int64_t n) const override;

  const UpdateBuffer& buffer() const { return buffer_; }

 protected:
  // The fewest updates the rule accepts (its own parameters fixed).
  virtual int64_t MinUpdates() const = 0;
  // The requirement MinUpdates encodes, for messages, e.g. "n > 2f + 2 = 6".
  virtual std::string Requirement() const = 0;
  // Writes the aggregated delta of buffer() (size() >= MinUpdates()) into `out` (dim floats).
  virtual void Aggregate(std::span<float> out) = 0;

  // Runs fn(i) for i in [0, n) over the pool (and the calling thread).
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);
  // The rule's worker pool; null when it runs on the calling thread only.
  ThreadPool* pool() const { return pool_.get(); }

 private:
  std::string name_;
  UpdateBuffer buffer_;
  std::unique_ptr<ThreadPool> pool_;  // null when threads == 1
  ModelWeights global_;
  bool begun_ = false;
};

}  // namespace tributary
