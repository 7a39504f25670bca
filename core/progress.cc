#include "core/progress.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/clock.h"
#include "core/log.h"

namespace tributary {
namespace {

// The process-wide defaults, as plain atomics so that SetDefaults may race with a Progress being
// made on another thread (each field is read whole; a mix of two SetDefaults calls is harmless).
struct DefaultOptions {
  std::atomic<int64_t> quiet_ns{std::chrono::nanoseconds(Progress::Options{}.quiet).count()};
  std::atomic<int64_t> interval_ns{std::chrono::nanoseconds(Progress::Options{}.interval).count()};
  std::atomic<uint64_t> check_every{Progress::Options{}.check_every};
  std::atomic<const Clock*> clock{nullptr};
};

DefaultOptions& TheDefaults() {
  static DefaultOptions* const defaults = new DefaultOptions();  // never destroyed, like Log()
  return *defaults;
}

double Seconds(Progress::Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Progress::Options Progress::Defaults() {
  const DefaultOptions& d = TheDefaults();
  Options o;
  o.quiet = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(d.quiet_ns.load()));
  o.interval = std::chrono::duration_cast<Duration>(std::chrono::nanoseconds(d.interval_ns.load()));
  o.check_every = d.check_every.load();
  o.clock = d.clock.load();
  return o;
}

void Progress::SetDefaults(const Options& o) {
  DefaultOptions& d = TheDefaults();
  d.quiet_ns.store(std::chrono::nanoseconds(o.quiet).count());
  d.interval_ns.store(std::chrono::nanoseconds(o.interval).count());
  d.check_every.store(o.check_every);
  d.clock.store(o.clock);
}

Progress::Progress(std::string description, uint64_t total, std::string unit)
    : Progress(std::move(description), total, std::move(unit), Defaults()) {}

Progress::Progress(std::string description, uint64_t total, std::string unit,
                   const Options& options)
    : description_(std::move(description)),
      total_(total),
      unit_(std::move(unit)),
      quiet_(options.quiet),
      interval_(options.interval),
      check_every_(std::max<uint64_t>(options.check_every, 1)),
      clock_(options.clock != nullptr ? options.clock : Clock::Real()),
      start_(clock_->Now()) {}

uint64_t Progress::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lines_;
}

Progress::Duration Progress::Elapsed() const { return clock_->Now() - start_; }

void Progress::Check() {
  // A thread that finds another one logging skips this check: its count is in done_ already.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  const auto now = clock_->Now();
  if (now - start_ < quiet_) return;
  if (lines_ > 0 && now - last_line_ < interval_) return;
  last_line_ = now;
  ++lines_;
  const uint64_t done = done_.load(std::memory_order_relaxed);
  if (total_ > 0) {
    // Whole percent, rounded down, so 100% means done (and never more, should a caller overshoot).
    const uint64_t percent = static_cast<uint64_t>(
        std::min(100.0, 100.0 * static_cast<double>(done) / static_cast<double>(total_)));
    Log().info("{}: {} ({}%), {:.1f} s", description_, Amount(done, true), percent,
               Seconds(now - start_));
  } else {
    Log().info("{}: {}, {:.1f} s", description_, Amount(done, false), Seconds(now - start_));
  }
}

void Progress::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  const Duration elapsed = Elapsed();
  if (lines_ == 0 && elapsed < quiet_) return;
  Log().info("{} done: {} in {:.1f} s", description_,
             Amount(done_.load(std::memory_order_relaxed), false), Seconds(elapsed));
}

std::string Progress::Amount(uint64_t done, bool with_total) const {
  if (unit_ != "bytes") {
    const std::string unit = unit_.empty() ? "" : " " + unit_;
    if (with_total) return fmt::format("{}/{}{}", done, total_, unit);
    return fmt::format("{}{}", done, unit);
  }
  // Bytes in the largest binary unit the total (or, when unknown, the amount) reaches.
  const uint64_t scale_of = total_ > 0 ? total_ : done;
  const char* name = "bytes";
  double scale = 1.0;
  if (scale_of >= (uint64_t{1} << 30)) {
    name = "GiB";
    scale = static_cast<double>(uint64_t{1} << 30);
  } else if (scale_of >= (uint64_t{1} << 20)) {
    name = "MiB";
    scale = static_cast<double>(uint64_t{1} << 20);
  } else if (scale_of >= (uint64_t{1} << 10)) {
    name = "KiB";
    scale = 1024.0;
  }
  if (scale == 1.0) {
    if (with_total) return fmt::format("{}/{} bytes", done, total_);
    return fmt::format("{} bytes", done);
  }
  if (with_total)
    return fmt::format("{:.1f}/{:.1f} {}", static_cast<double>(done) / scale,
                       static_cast<double>(total_) / scale, name);
  return fmt::format("{:.1f} {}", static_cast<double>(done) / scale, name);
}

}  // namespace tributary
