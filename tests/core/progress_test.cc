// Progress (core/progress.h): quiet for short operations, a line per interval after that, a
// closing line, and counts that add up across threads. Time comes from a ManualClock.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/manual_clock.h"
#include "tests/core/log_capture.h"
#include "tests/core/progress_lines.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;
using testing::LogCapture;
using Lines = std::vector<std::string>;

class ProgressTest : public ::testing::Test {
 protected:
  // Quiet for 1 s, a line at most every second, the clock read on every call.
  Progress::Options Every(uint64_t check_every = 1) const {
    Progress::Options o;
    o.check_every = check_every;
    o.clock = &clock_;
    return o;
  }

  ManualClock clock_;
  LogCapture log_{LogLevel::kInfo};
};

TEST_F(ProgressTest, AShortOperationLogsNothing) {
  Progress p("loading", 100, "images", Every());
  for (int i = 0; i < 100; ++i) {
    clock_.Advance(9ms);  // 0.9 s in all: under the quiet second
    p.Advance();
  }
  p.Done();
  EXPECT_EQ(p.done(), 100u);
  EXPECT_EQ(p.lines(), 0u);
  EXPECT_EQ(log_.lines(), Lines{});
}

TEST_F(ProgressTest, ALongOperationLogsOncePerIntervalThenDone) {
  Progress p("loading Fashion-MNIST training images", 60000, "images", Every());
  for (int i = 1; i <= 60; ++i) {
    clock_.Advance(250ms);  // 1000 images every quarter second: 15 s in all
    p.Advance(1000);
  }
  p.Done();
  const Lines lines = log_.lines();
  ASSERT_EQ(lines.size(), 16u);  // seconds 1, 2, ..., 15 and the closing line
  EXPECT_EQ(lines[0], "info|loading Fashion-MNIST training images: 4000/60000 images (6%), 1.0 s");
  EXPECT_EQ(lines[1], "info|loading Fashion-MNIST training images: 8000/60000 images (13%), 2.0 s");
  EXPECT_EQ(lines[6],
            "info|loading Fashion-MNIST training images: 28000/60000 images (46%), 7.0 s");
  EXPECT_EQ(lines[14],
            "info|loading Fashion-MNIST training images: 60000/60000 images (100%), 15.0 s");
  EXPECT_EQ(lines[15], "info|loading Fashion-MNIST training images done: 60000 images in 15.0 s");
  EXPECT_EQ(p.lines(), 15u);
}

TEST_F(ProgressTest, TheIntervalIsConfigurable) {
  Progress::Options o = Every();
  o.quiet = 0s;
  o.interval = 500ms;
  Progress p("partitioning", 10, "", o);
  for (int i = 0; i < 10; ++i) {
    p.Advance();  // at 0, 0.2, ..., 1.8 s: a line at 0, then one >= 0.5 s after it
    clock_.Advance(200ms);
  }
  EXPECT_EQ(
      log_.lines(),
      (Lines{"info|partitioning: 1/10 (10%), 0.0 s", "info|partitioning: 4/10 (40%), 0.6 s",
             "info|partitioning: 7/10 (70%), 1.2 s", "info|partitioning: 10/10 (100%), 1.8 s"}));
}

TEST_F(ProgressTest, TheClockIsReadOnlyEveryCheckEveryCalls) {
  Progress::Options o = Every(/*check_every=*/64);
  o.quiet = 0s;
  o.interval = 0s;
  Progress p("registering clients", 200, "clients", o);
  for (int i = 0; i < 200; ++i) p.Advance();
  // Calls 1, 65, 129 and 193 check (and, with no interval, log).
  EXPECT_EQ(log_.lines(), (Lines{"info|registering clients: 1/200 clients (0%), 0.0 s",
                                 "info|registering clients: 65/200 clients (32%), 0.0 s",
                                 "info|registering clients: 129/200 clients (64%), 0.0 s",
                                 "info|registering clients: 193/200 clients (96%), 0.0 s"}));
}

TEST_F(ProgressTest, DoneSaysHowLongALongOperationTookEvenWithoutALine) {
  Progress p("writing checkpoint", 0, "", Every());
  p.Advance();             // at 0 s: still quiet
  clock_.Advance(2500ms);  // a long last step (an fsync) with no Advance during it
  p.Done();
  p.Done();  // once only
  EXPECT_EQ(log_.lines(), Lines{"info|writing checkpoint done: 1 in 2.5 s"});
}

TEST_F(ProgressTest, BytesAreShownInBinaryUnits) {
  Progress p("writing checkpoint", uint64_t{3} << 30, "bytes", Every());
  clock_.Advance(1s);
  p.Set(uint64_t{3} << 29);
  clock_.Advance(1s);
  p.Set(uint64_t{3} << 30);
  p.Done();
  Progress small("writing model", 3 << 19, "bytes", Every());
  clock_.Advance(1s);
  small.Set(1 << 19);
  Progress tiny("writing report", 1000, "bytes", Every());
  clock_.Advance(1s);
  tiny.Set(600);
  EXPECT_EQ(log_.lines(), (Lines{"info|writing checkpoint: 1.5/3.0 GiB (50%), 1.0 s",
                                 "info|writing checkpoint: 3.0/3.0 GiB (100%), 2.0 s",
                                 "info|writing checkpoint done: 3.0 GiB in 2.0 s",
                                 "info|writing model: 0.5/1.5 MiB (33%), 1.0 s",
                                 "info|writing report: 600/1000 bytes (60%), 1.0 s"}));
}

TEST_F(ProgressTest, AnUnknownTotalHasNoPercentage) {
  Progress p("reading rows", 0, "rows", Every());
  clock_.Advance(1200ms);
  p.Advance(42);
  p.Done();
  EXPECT_EQ(log_.lines(), (Lines{"info|reading rows: 42 rows, 1.2 s",
                                 "info|reading rows done: 42 rows in 1.2 s"}));
}

TEST_F(ProgressTest, WithoutDoneNothingMoreIsLogged) {
  {
    Progress p("loading", 10, "", Every());
    clock_.Advance(1s);
    p.Advance(3);  // then an error: the caller returns without Done
  }
  EXPECT_EQ(log_.lines(), Lines{"info|loading: 3/10 (30%), 1.0 s"});
}

TEST_F(ProgressTest, NothingIsLoggedBelowInfo) {
  LogCapture warnings(LogLevel::kWarn);  // replaces the info capture
  Progress p("loading", 10, "", Every());
  clock_.Advance(2s);
  p.Advance(10);
  p.Done();
  EXPECT_EQ(p.lines(), 1u);  // counted, but the handler takes only warnings
  EXPECT_EQ(warnings.lines(), Lines{});
}

TEST_F(ProgressTest, ThreadsAdvanceOneCount) {
  Progress::Options o = Every(/*check_every=*/7);
  o.quiet = 0s;
  o.interval = 0s;
  Progress p("registering clients", 40000, "clients", o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&p] {
      for (int i = 0; i < 10000; ++i) p.Advance();
    });
  for (std::thread& t : threads) t.join();
  p.Done();
  EXPECT_EQ(p.done(), 40000u);
  const Lines lines = log_.lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_GE(p.lines(), 1u);
  EXPECT_LE(p.lines(), 40000u / 7 + 1);  // at most one line per check
  EXPECT_EQ(lines.back(), "info|registering clients done: 40000 clients in 0.0 s");
}

TEST_F(ProgressTest, DefaultsApplyToProgressMadeWithoutOptions) {
  const Progress::Options before = Progress::Defaults();
  EXPECT_EQ(before.quiet, 1s);
  EXPECT_EQ(before.interval, 1s);
  EXPECT_EQ(before.check_every, 64u);
  {
    testing::ForceProgressLines force;
    Progress p("loading", 2, "files");
    p.Advance();
    p.Advance();
    p.Done();
    ASSERT_EQ(log_.lines().size(), 3u);
    EXPECT_EQ(log_.lines()[1].rfind("info|loading: 2/2 files (100%), ", 0), 0u);
    EXPECT_EQ(log_.lines()[2].rfind("info|loading done: 2 files in ", 0), 0u);
  }
  EXPECT_EQ(Progress::Defaults().quiet, 1s);
  EXPECT_EQ(Progress::Defaults().check_every, 64u);
  Progress quiet("loading", 2, "files");
  quiet.Advance(2);
  quiet.Done();
  EXPECT_EQ(log_.lines().size(), 3u);  // a real second has not passed
}

}  // namespace
}  // namespace tributary
