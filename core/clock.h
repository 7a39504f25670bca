// Clock: the time seam. Now() plus timers whose callbacks run on an executor (an asio strand).
//
//   Clock* clock = Clock::Real();                       // steady_clock and asio timers
//   std::unique_ptr<Timer> t = clock->MakeTimer(strand);
//   t->ExpiresAfter(5s, [this] { OnDeadline(); });       // runs on `strand` in 5 s
//
// Code that reads the time or waits takes a Clock* instead of calling steady_clock or making an
// asio timer, so tests drive it with a ManualClock (core/manual_clock.h): deadlines, heartbeats and
// backoff are then tested without sleeping.
//
// Timer semantics follow asio's steady_timer, with one difference that callers rely on: a callback
// that was cancelled or superseded never runs (asio would run it with operation_aborted). Arming
// again replaces the pending callback. A timer must be armed, cancelled and destroyed on its
// executor (its strand), like an asio timer; destroying it cancels it. Callbacks run on the
// executor, never inside ExpiresAt.
//
// Clock::Real() is thread-safe and lives for the whole process.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace tributary {

using TimePoint = std::chrono::steady_clock::time_point;
using Duration = std::chrono::steady_clock::duration;

class Timer {
 public:
  Timer() = default;
  virtual ~Timer() = default;
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `fn` once on the timer's executor when the clock reaches `when` (soon, when it already
  // has), unless the timer is armed again, cancelled or destroyed first.
  virtual void ExpiresAt(TimePoint when, std::function<void()> fn) = 0;
  // ExpiresAt(the clock's Now() + d).
  virtual void ExpiresAfter(Duration d, std::function<void()> fn) = 0;
  // The pending callback, if any, will not run.
  virtual void Cancel() = 0;
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;
  // A timer whose callbacks run on `executor`.
  virtual std::unique_ptr<Timer> MakeTimer(boost::asio::any_io_executor executor) = 0;

  // std::chrono::steady_clock with asio steady_timers.
  static Clock* Real();
};

}  // namespace tributary
