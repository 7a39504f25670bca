#include "core/clock.h"

#include <boost/asio/steady_timer.hpp>

namespace tributary {
namespace {

// An asio steady_timer. `armed_` counts arms and cancels; a completion runs the callback only if
// no arm or cancel came after the one it belongs to (asio may already have queued a successful
// completion when the timer is re-armed). The counter is shared with queued completions so that
// one running after the timer is gone sees a newer count and returns.
class RealTimer final : public Timer {
 public:
  explicit RealTimer(boost::asio::any_io_executor executor)
      : timer_(std::move(executor)), armed_(std::make_shared<uint64_t>(0)) {}
  ~RealTimer() override { Cancel(); }

  void ExpiresAt(TimePoint when, std::function<void()> fn) override {
    const uint64_t mine = ++*armed_;
    timer_.expires_at(when);
    timer_.async_wait([armed = armed_, mine, fn = std::move(fn)](const boost::system::error_code&) {
      if (*armed == mine) fn();
    });
  }

  void ExpiresAfter(Duration d, std::function<void()> fn) override {
    ExpiresAt(std::chrono::steady_clock::now() + d, std::move(fn));
  }

  void Cancel() override {
    ++*armed_;
    timer_.cancel();
  }

 private:
  boost::asio::steady_timer timer_;
  std::shared_ptr<uint64_t> armed_;
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
