#include "core/clock.h"

#include <boost/asio/steady_timer.hpp>
#include <mutex>

namespace tributary {
namespace {

// An asio steady_timer. `armed` counts arms and cancels; a completion runs the callback only if
// no arm or cancel came after the one it belongs to (asio may already have queued a successful
// completion when the timer is re-armed). The state is shared with queued completions so that one
// running after the timer is gone sees a newer count and returns.
class RealTimer final : public Timer {
 public:
  explicit RealTimer(boost::asio::any_io_executor executor)
      : timer_(std::move(executor)), state_(std::make_shared<State>()) {}
  ~RealTimer() override { Cancel(); }

  void ExpiresAt(TimePoint when, std::function<void()> fn) override {
    uint64_t mine;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      mine = ++state_->armed;
      state_->fn = std::move(fn);
    }
    timer_.expires_at(when);
    timer_.async_wait([state = state_, mine](const boost::system::error_code&) {
      std::function<void()> run;
      {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->armed != mine) return;
        run.swap(state->fn);
      }
      if (run) run();  // may re-arm the timer
    });
  }

  void ExpiresAfter(Duration d, std::function<void()> fn) override {
    ExpiresAt(std::chrono::steady_clock::now() + d, std::move(fn));
  }

  // Drops the callback at once, not when the cancelled wait completes: what it captured (often a
  // shared_ptr to its owner) must not outlive the owner's use of the executor. A wait still queued
  // when the io_context is destroyed then holds nothing that touches the context's services. The
  // destructor may run on another thread than a completion in flight: the state is locked.
  void Cancel() override {
    std::function<void()> dropped;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      ++state_->armed;
      dropped.swap(state_->fn);
    }
    timer_.cancel();
  }

 private:
  struct State {
    std::mutex mu;
    uint64_t armed = 0;        // GUARDED_BY(mu)
    std::function<void()> fn;  // GUARDED_BY(mu)
  };
  boost::asio::steady_timer timer_;
  std::shared_ptr<State> state_;
};

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  std::unique_ptr<Timer> MakeTimer(boost::asio::any_io_executor executor) override {
    return std::make_unique<RealTimer>(std::move(executor));
  }
};

}  // namespace

Clock* Clock::Real() {
  static RealClock clock;
  return &clock;
}

}  // namespace tributary
