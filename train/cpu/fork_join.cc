#include "train/cpu/fork_join.h"

#include "core/check.h"

namespace tributary::cpu {
namespace {

// How long an idle worker polls for the next step before it sleeps (iterations of a pause
// instruction: about 20 to 100 microseconds on current cores).
constexpr int kSpinIterations = 20000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

ForkJoin::ForkJoin(int threads) {
  TRIB_CHECK(threads >= 1, "ForkJoin needs at least one thread");
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ForkJoin::~ForkJoin() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ForkJoin::Run(int items, const std::function<void(int)>& fn) {
  TRIB_CHECK(items >= 1 && items <= threads(), "ForkJoin::Run: items out of range");
  if (items == 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    items_ = items;
    pending_.store(items - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  fn(0);
  while (pending_.load(std::memory_order_acquire) != 0) CpuRelax();
}

void ForkJoin::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Wait for a new generation: poll first, then sleep.
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      CpuRelax();
      ++spins;
    }
    const std::function<void(int)>* fn;
    int items;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
      seen = generation_.load(std::memory_order_acquire);
      fn = fn_;
      items = items_;
    }
    if (index < items) {
      (*fn)(index);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

}  // namespace tributary::cpu
