#include "core/manual_clock.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <map>
#include <mutex>

#include "core/check.h"

namespace tributary {

struct ManualClock::State {
  struct Entry {
    TimePoint when;
    boost::asio::any_io_executor executor;
    std::shared_ptr<uint64_t> armed;  // the timer's arm counter, read on its executor
    uint64_t mine = 0;
    std::function<void()> fn;
  };

  // Posts and removes every due entry. Called with mu held.
  void PostDueLocked() {
    std::vector<Entry> due;
    for (auto it = armed.begin(); it != armed.end();) {
      if (it->second.when <= now) {
        due.push_back(std::move(it->second));
        it = armed.erase(it);
      } else {
        ++it;
      }
    }
    std::stable_sort(due.begin(), due.end(),
                     [](const Entry& a, const Entry& b) { return a.when < b.when; });
    for (Entry& e : due) {
      boost::asio::post(e.executor, [armed = e.armed, mine = e.mine, fn = std::move(e.fn)] {
        if (*armed == mine) fn();
      });
    }
  }

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  TimePoint now;                       // guarded by mu
  std::map<const void*, Entry> armed;  // by timer; guarded by mu
  bool closed = false;                 // the ManualClock is gone; guarded by mu
};

class ManualClock::ManualTimer final : public Timer {
 public:
  ManualTimer(std::shared_ptr<State> state, boost::asio::any_io_executor executor)
      : state_(std::move(state)), executor_(std::move(executor)) {}
  ~ManualTimer() override { Cancel(); }

  void ExpiresAt(TimePoint when, std::function<void()> fn) override {
    const uint64_t mine = ++*armed_;
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->closed) return;
    state_->armed[this] = State::Entry{when, executor_, armed_, mine, std::move(fn)};
    state_->PostDueLocked();
    state_->cv.notify_all();
  }
  void ExpiresAfter(Duration d, std::function<void()> fn) override {
    TimePoint now;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      now = state_->now;
    }
    ExpiresAt(now + d, std::move(fn));
  }
  void Cancel() override {
    ++*armed_;
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->armed.erase(this);
  }

 private:
  std::shared_ptr<State> state_;
  boost::asio::any_io_executor executor_;
  std::shared_ptr<uint64_t> armed_ = std::make_shared<uint64_t>(0);
};

ManualClock::ManualClock(TimePoint start) : state_(std::make_shared<State>()) {
  state_->now = start;
}

ManualClock::~ManualClock() {
  // Release the armed callbacks, which often hold their timer's owner (a service that captured
  // shared_from_this()), outside the lock: the owners' destructors cancel their timers.
  std::map<const void*, State::Entry> armed;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->closed = true;
    armed.swap(state_->armed);
  }
}

TimePoint ManualClock::Now() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->now;
}

std::unique_ptr<Timer> ManualClock::MakeTimer(boost::asio::any_io_executor executor) {
  return std::make_unique<ManualTimer>(state_, std::move(executor));
}

void ManualClock::Advance(Duration d) {
  TRIB_CHECK(d.count() >= 0, "ManualClock::Advance with a negative duration");
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->now += d;
  state_->PostDueLocked();
}

bool ManualClock::AdvanceToNextTimer() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->armed.empty()) return false;
  TimePoint next = TimePoint::max();
  for (const auto& [timer, e] : state_->armed) next = std::min(next, e.when);
  state_->now = std::max(state_->now, next);
  state_->PostDueLocked();
  return true;
}

std::vector<TimePoint> ManualClock::ArmedTimers() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<TimePoint> out;
  for (const auto& [timer, e] : state_->armed) out.push_back(e.when);
  std::sort(out.begin(), out.end());
  return out;
}

bool ManualClock::WaitForTimers(size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->armed.size() >= n; });
}

}  // namespace tributary
