// Clock::Real() and ManualClock: callbacks run on their executor, once, at their time; re-arming
// and cancelling mean the old callback never runs, even when it was already queued.
#include "core/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <future>
#include <thread>

#include "core/manual_clock.h"

namespace tributary {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// An io_context run by one thread, with a strand to make timers on.
class Loop {
 public:
  Loop() : work_(asio::make_work_guard(io_)), strand_(asio::make_strand(io_)) {
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Loop() {
    work_.reset();
    io_.stop();
    thread_.join();
  }
  asio::strand<asio::io_context::executor_type>& strand() { return strand_; }
  // Runs fn on the strand and waits for it.
  template <class F>
  auto On(F fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto fut = task.get_future();
    asio::post(strand_, [&task] { task(); });
    return fut.get();
  }
  // Waits until everything posted to the strand so far has run.
  void Drain() {
    On([] { return 0; });
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  asio::strand<asio::io_context::executor_type> strand_;
  std::thread thread_;
};

TEST(RealClockTest, TimerFiresOnItsStrandAfterItsDelay) {
  Loop loop;
  std::promise<std::chrono::steady_clock::time_point> fired;
  const auto t0 = std::chrono::steady_clock::now();
  auto timer = loop.On([&] {
    auto t = Clock::Real()->MakeTimer(loop.strand());
    t->ExpiresAfter(30ms, [&] {
      EXPECT_TRUE(loop.strand().running_in_this_thread());
      fired.set_value(std::chrono::steady_clock::now());
    });
    return t;
  });
  EXPECT_GE(fired.get_future().get() - t0, 30ms);
  loop.On([&] {
    timer.reset();
    return 0;
  });
}

TEST(RealClockTest, RearmAndCancelMeanTheOldCallbackNeverRuns) {
  Loop loop;
  std::atomic<int> first{0}, second{0}, cancelled{0};
  std::promise<void> done;
  auto timer = loop.On([&] {
    auto t = Clock::Real()->MakeTimer(loop.strand());
    t->ExpiresAfter(1ms, [&] { ++first; });
    t->ExpiresAfter(5ms, [&] {
      ++second;
      done.set_value();
    });
    return t;
  });
  done.get_future().wait();
  auto other = loop.On([&] {
    auto t = Clock::Real()->MakeTimer(loop.strand());
    t->ExpiresAfter(0ms, [&] { ++cancelled; });
    t->Cancel();
    return t;
  });
  std::this_thread::sleep_for(20ms);  // give a wrongly delivered callback the chance to run
  loop.Drain();
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(cancelled, 0);
  loop.On([&] {
    timer.reset();
    other.reset();
    return 0;
  });
}

TEST(ManualClockTest, AdvancePostsDueTimersInOrderAndOnlyThose) {
  Loop loop;
  ManualClock clock;  // after the loop: destroyed first
  const TimePoint t0 = clock.Now();
  std::vector<int> order;
  std::vector<std::unique_ptr<Timer>> timers;
  loop.On([&] {
    for (int i : {3, 1, 2}) {
      timers.push_back(clock.MakeTimer(loop.strand()));
      timers.back()->ExpiresAfter(std::chrono::seconds(i), [&order, i] { order.push_back(i); });
    }
    return 0;
  });
  EXPECT_EQ(clock.ArmedTimers(), (std::vector<TimePoint>{t0 + 1s, t0 + 2s, t0 + 3s}));
  clock.Advance(2s);
  loop.Drain();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(clock.Now(), t0 + 2s);
  EXPECT_EQ(clock.ArmedTimers(), (std::vector<TimePoint>{t0 + 3s}));
  EXPECT_TRUE(clock.AdvanceToNextTimer());
  loop.Drain();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(clock.Now(), t0 + 3s);
  EXPECT_FALSE(clock.AdvanceToNextTimer());
  loop.On([&] {
    timers.clear();
    return 0;
  });
}

TEST(ManualClockTest, CancelAfterTheCallbackWasPostedStillPreventsIt) {
  Loop loop;
  ManualClock clock;  // after the loop: destroyed first
  int runs = 0;
  std::unique_ptr<Timer> timer;
  std::promise<void> blocked, release;
  loop.On([&] {
    timer = clock.MakeTimer(loop.strand());
    timer->ExpiresAfter(1s, [&] { ++runs; });
    return 0;
  });
  // Hold the strand so the posted callback waits behind a job that cancels the timer.
  asio::post(loop.strand(), [&] {
    blocked.set_value();
    release.get_future().wait();
    timer->Cancel();
  });
  blocked.get_future().wait();
  clock.Advance(1s);  // posts the callback behind the blocking job
  release.set_value();
  loop.Drain();
  EXPECT_EQ(runs, 0);
  loop.On([&] {
    timer.reset();
    return 0;
  });
}

TEST(ManualClockTest, TimerArmedInThePastIsPostedAtOnceAndWaitForTimersSeesArms) {
  Loop loop;
  ManualClock clock;  // after the loop: destroyed first
  std::promise<void> ran;
  std::unique_ptr<Timer> late, pending;
  std::thread armer([&] {
    loop.On([&] {
      late = clock.MakeTimer(loop.strand());
      late->ExpiresAt(clock.Now() - 1s, [&] { ran.set_value(); });
      pending = clock.MakeTimer(loop.strand());
      pending->ExpiresAfter(1h, [] {});
      return 0;
    });
  });
  EXPECT_TRUE(clock.WaitForTimers(1));
  ran.get_future().wait();
  armer.join();
  EXPECT_EQ(clock.ArmedTimers().size(), 1u);
  loop.On([&] {
    late.reset();
    pending.reset();
    return 0;
  });
  EXPECT_TRUE(clock.ArmedTimers().empty());
}

}  // namespace
}  // namespace tributary
