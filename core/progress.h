// Progress: a line now and then while a long operation runs, through the library's logger.
//
//   Progress progress("registering the simulated clients", population.size(), "clients");
//   for (uint64_t i = 0; i < population.size(); ++i) {
//     Register(i);
//     progress.Advance();
//   }
//   progress.Done();
//
// logs, at info level (core/log.h; the library itself never writes to stdout or stderr),
//
//   registering the simulated clients: 982913/3000000 clients (32%), 1.0 s
//   registering the simulated clients: 1904065/3000000 clients (63%), 2.0 s
//   registering the simulated clients done: 3000000 clients in 2.9 s
//
// Nothing is logged before the operation has run for Options::quiet (1 s), so short operations
// stay silent; after that a line at most every Options::interval (1 s). Lines are only logged from
// Advance and Set, so a step that takes long between two calls shows no line during it. Done logs
// the closing line when a line was logged before, or when the whole operation took at least
// `quiet` (a long last step, such as an fsync after the last byte, still says how long it took).
// A Progress that is destroyed without Done (an error path) logs nothing more: the caller's error
// says why it stopped. The unit "bytes" is shown in KiB, MiB or GiB; a total of 0 means unknown
// (no percentage); a count past the total shows 100%.
//
// Cheap enough to call per item: Advance is an atomic add, plus a look at the clock every
// Options::check_every calls. Code that advances from a tight loop of tiny steps should still
// advance in batches; code whose steps are large (a chunk of a file) sets check_every to 1.
// Library code starts from Defaults(), so that SetDefaults reaches it (tests force lines with
// tests/core/progress_lines.h).
//
// Thread-safe: Advance and Set may be called from any number of threads at once (a line is logged
// by one of them; another that finds the logger busy skips its turn). Done is called after the
// last Advance; calls after the first do nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace tributary {

class Clock;

class Progress {
 public:
  using Duration = std::chrono::steady_clock::duration;
  struct Options {
    // Nothing is logged before the operation has run this long.
    Duration quiet = std::chrono::seconds(1);
    // At most one line per interval.
    Duration interval = std::chrono::seconds(1);
    // The clock is read on every check_every-th call of Advance or Set (and on the first); >= 1.
    uint64_t check_every = 64;
    // Not owned; null: Clock::Real() (std::chrono::steady_clock).
    const Clock* clock = nullptr;
  };

  // What a Progress made without Options uses: Options{} unless SetDefaults changed them.
  static Options Defaults();
  // Changes the defaults for the whole process, for Progress objects made afterwards; for tests
  // (an interval of 0 makes every check log) and for tools that want more or fewer lines.
  // Thread-safe.
  static void SetDefaults(const Options& options);

  // `description` says what is going on ("loading Fashion-MNIST training images"); `total` is the
  // amount when done (0: unknown), counted in `unit` ("images", "bytes", "" for none). The clock
  // starts now.
  Progress(std::string description, uint64_t total, std::string unit);
  Progress(std::string description, uint64_t total, std::string unit, const Options& options);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Counts `n` more done.
  void Advance(uint64_t n = 1) {
    done_.fetch_add(n, std::memory_order_relaxed);
    Tick();
  }
  // Sets the amount done (for a caller that knows it, such as an offset into a file).
  void Set(uint64_t done) {
    done_.store(done, std::memory_order_relaxed);
    Tick();
  }
  // The closing line (see above), after the last Advance or Set; only the first call counts.
  void Done();

  uint64_t done() const { return done_.load(std::memory_order_relaxed); }
  uint64_t total() const { return total_; }
  // How many progress lines were logged (the closing one not counted).
  uint64_t lines() const;

 private:
  void Tick() {
    if (calls_.fetch_add(1, std::memory_order_relaxed) % check_every_ == 0) Check();
  }
  void Check();
  Duration Elapsed() const;
  // "30000/60000 images" (or "30000 images" when the total is unknown).
  std::string Amount(uint64_t done, bool with_total) const;

  const std::string description_;
  const uint64_t total_;
  const std::string unit_;
  const Duration quiet_, interval_;
  const uint64_t check_every_;
  const Clock* const clock_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<uint64_t> done_{0};
  std::atomic<uint64_t> calls_{0};
  mutable std::mutex mu_;                              // one thread logs at a time
  std::chrono::steady_clock::time_point last_line_{};  // GUARDED_BY(mu_)
  uint64_t lines_ = 0;                                 // GUARDED_BY(mu_)
  bool finished_ = false;                              // GUARDED_BY(mu_)
};

}  // namespace tributary
