// ThreadPool: a fixed set of worker threads draining one FIFO task queue.
//
// Submit() may be called from any thread, including from inside a task. The destructor finishes
// every queued task, then joins. Exceptions thrown by a task surface through its future.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace tributary {

class ThreadPool {
 public:
  // num_threads == 0 means std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(size_t num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }

  template <typename F>
  auto Submit(F&& fn) -> std::future<decltype(fn())> {
    using R = decltype(fn());
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    std::future<R> fut = task->get_future();
    Enqueue([task] { (*task)(); });
    return fut;
  }

  // Runs fn(i) for i in [begin, end), split into contiguous chunks over the workers and the calling
  // thread, and returns when all are done. Rethrows the first exception.
  void ParallelFor(size_t begin, size_t end, const std::function<void(size_t)>& fn);

 private:
  void Enqueue(std::function<void()> job);
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace tributary
