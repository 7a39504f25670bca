// ManualClock: a Clock whose time moves only when a test says so.
//
//   IoThreads io;                           // the io_context the code under test runs on
//   ManualClock clock;                      // declared after it: see "Lifetime" below
//   service = Make(..., &clock);
//   ASSERT_TRUE(clock.WaitForTimers(1));    // the code under test armed its timer
//   clock.Advance(5s);                      // every timer now due is posted to its executor
//
// Advance() posts each callback that falls due, in order of due time, to the executor the timer
// was made with; it does not run them itself, so the code under test still runs on its own strand
// and threads. A callback cancelled or superseded after it was posted does not run (Timer's
// contract). Timers armed for a time that has already come are posted at once.
//
// Lifetime: an armed callback is held by the clock, as a pending handler is held by an
// io_context, and released when the clock is destroyed. Destroy the clock before the io_contexts
// its timers post to (declare it after them). Timers may outlive the clock; they then never fire.
//
// Thread-safe: tests advance the clock from their own thread while the code under test arms and
// cancels timers on its strands.
#pragma once

#include <memory>
#include <vector>

#include "core/clock.h"

namespace tributary {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint{} + std::chrono::hours(24));
  ~ManualClock() override;

  TimePoint Now() const override;
  std::unique_ptr<Timer> MakeTimer(boost::asio::any_io_executor executor) override;

  // Moves the time forward by `d` (>= 0) and posts every timer that is due.
  void Advance(Duration d);
  // Moves the time to the earliest armed timer (if it is in the future) and posts what is due;
  // false when no timer is armed.
  bool AdvanceToNextTimer();

  // Due times of the armed timers, earliest first.
  std::vector<TimePoint> ArmedTimers() const;
  // Blocks (in real time, at most `timeout`) until at least `n` timers are armed; false on timeout.
  // For tests whose code under test arms timers on other threads.
  bool WaitForTimers(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;

 private:
  class ManualTimer;
  struct State;
  std::shared_ptr<State> state_;  // shared with the timers
};

}  // namespace tributary
