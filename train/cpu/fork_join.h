// ForkJoin: runs a step's work items on a fixed set of threads and waits for all of them.
//
//   ForkJoin pool(4);                        // the caller plus 3 worker threads
//   pool.Run(4, [&](int i) { Shard(i); });  // item i runs on thread i (0: the caller); returns
//                                            // when every item has finished
//
// Item i always runs on the same thread, so per-thread scratch stays warm in that core's cache.
// Made for the CPU engine's steps, which are short (a fraction of a millisecond for the mlp) and
// many: workers spin briefly for the next step before they sleep on a condition variable, so a
// step does not pay a futex wake-up per worker when steps follow each other closely.
//
// Run() must be called from one thread at a time (the engine's); items must not throw. The
// destructor stops and joins the workers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tributary::cpu {

class ForkJoin {
 public:
  // threads >= 1: the caller counts as one.
  explicit ForkJoin(int threads);
  ~ForkJoin();
  ForkJoin(const ForkJoin&) = delete;
  ForkJoin& operator=(const ForkJoin&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(0) .. fn(items - 1), item i on thread i; items in [1, threads()].
  void Run(int items, const std::function<void(int)>& fn);

 private:
  void WorkerLoop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  const std::function<void(int)>* fn_ = nullptr;  // the current step's work (under generation_)
  int items_ = 0;
  std::atomic<uint64_t> generation_{0};  // bumped by Run to start a step
  std::atomic<int> pending_{0};          // items of the current step not yet finished
  bool stop_ = false;
};

}  // namespace tributary::cpu
