// The library's logger (core/log.h) and its process-wide handler (tributary/log.h).
#include "core/log.h"

#include <spdlog/spdlog.h>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/stderr_log.h"
#include "tests/core/stdio_capture.h"
#include "tributary/log.h"

namespace tributary {
namespace {

using testing::StdioCapture;
using LevelLines = std::vector<std::pair<LogLevel, std::string>>;

class LogTest : public ::testing::Test {
 protected:
  ~LogTest() override { SetLogHandler(LogLevel::kOff, nullptr); }

  // The handler's calls never overlap (the library holds a lock), so these need none.
  static LogCallback Into(LevelLines* lines) {
    return [lines](LogLevel level, std::string_view text) {
      lines->emplace_back(level, std::string(text));
    };
  }
};

TEST_F(LogTest, TheLibraryIsSilentUntilAHandlerIsInstalled) {
  StdioCapture capture;
  Log().error("nobody asked for {}", "this");
  Log().warn("nor this");
  Log().info("nor this");
  EXPECT_EQ(capture.Finish(), "");
}

TEST_F(LogTest, TheHandlerGetsTheLinesAtItsLevelAndAboveWithTheirLevels) {
  LevelLines lines;
  SetLogHandler(LogLevel::kInfo, Into(&lines));
  Log().trace("t");
  Log().debug("d {}", 1);
  Log().info("round {}: fit loss {:.2f}", 3, 0.25);
  Log().warn("w");
  Log().error("e");
  Log().critical("c");  // the library logs none; if it did, the app would see an error
  const LevelLines expected = {{LogLevel::kInfo, "round 3: fit loss 0.25"},
                               {LogLevel::kWarn, "w"},
                               {LogLevel::kError, "e"},
                               {LogLevel::kError, "c"}};
  EXPECT_EQ(lines, expected);
}

// Text from a peer cannot forge a line: newlines, carriage returns, terminal escapes and other
// control characters (C0, DEL, C1 in UTF-8) are shown escaped; tabs and UTF-8 pass.
TEST_F(LogTest, ControlCharactersInALineAreShownEscapedSoOneLineStaysOne) {
  LevelLines lines;
  SetLogHandler(LogLevel::kInfo, Into(&lines));
  const std::string forged =
      "x\n[12:00:00.000] [warning] security: refusing alice\r\x1b[2J\x7f\xc2\x9b\x01";
  Log().warn("client bob reports {}", forged);
  Log().info("tab\there, caf\xc3\xa9, \xc2\xa0nbsp");
  const LevelLines expected = {
      {LogLevel::kWarn,
       "client bob reports x\\n[12:00:00.000] [warning] security: refusing "
       "alice\\r\\x1b[2J\\x7f\\x9b\\x01"},
      {LogLevel::kInfo, "tab\there, caf\xc3\xa9, \xc2\xa0nbsp"}};
  EXPECT_EQ(lines, expected);
}

TEST_F(LogTest, ANewHandlerReplacesTheOldOneAndOffOrNullRemovesIt) {
  LevelLines first, second, third;
  SetLogHandler(LogLevel::kTrace, Into(&first));
  Log().trace("one");
  SetLogHandler(LogLevel::kWarn, Into(&second));
  Log().info("two");
  Log().warn("three");
  SetLogHandler(LogLevel::kOff, Into(&third));
  Log().error("four");
  SetLogHandler(LogLevel::kInfo, nullptr);
  Log().error("five");
  SetLogHandler(static_cast<LogLevel>(42), Into(&third));  // outside the enum: silent too
  Log().error("six");
  EXPECT_EQ(first, (LevelLines{{LogLevel::kTrace, "one"}}));
  EXPECT_EQ(second, (LevelLines{{LogLevel::kWarn, "three"}}));
  EXPECT_EQ(third, LevelLines{});
}

TEST_F(LogTest, CallsFromManyThreadsNeverOverlap) {
  constexpr int kThreads = 8, kLines = 2000;
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  int calls = 0;  // unguarded on purpose: only the library's lock protects it (TSan checks)
  SetLogHandler(LogLevel::kInfo, [&](LogLevel, std::string_view) {
    if (inside.fetch_add(1) != 0) overlaps++;
    ++calls;
    inside.fetch_sub(1);
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) Log().info("thread {} line {}", t, i);
    });
  for (auto& t : threads) t.join();
  SetLogHandler(LogLevel::kOff, nullptr);
  EXPECT_EQ(calls, kThreads * kLines);
  EXPECT_EQ(overlaps.load(), 0);
}

TEST_F(LogTest, AThrowingHandlerLosesTheLineButNeitherThrowsNorPrints) {
  int calls = 0;
  SetLogHandler(LogLevel::kInfo, [&](LogLevel, std::string_view text) {
    ++calls;
    if (text == "std") throw std::runtime_error("handler failed");
    throw 42;
  });
  StdioCapture capture;
  bool threw = false;
  try {
    Log().info("std");
    Log().info("int");
  } catch (...) {
    threw = true;
  }
  const std::string written = capture.Finish();
  EXPECT_FALSE(threw);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(written, "");
}

TEST_F(LogTest, InitLoggingSendsTheLibrarysLinesAndTheToolsLinesToStderr) {
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  EXPECT_EQ(InitLogging("loud").code(), StatusCode::kInvalidArgument);
  StdioCapture capture;
  const Status s = InitLogging("warn");
  Log().info("library info");
  Log().warn("library warning {}", 7);
  spdlog::info("tool info");
  spdlog::error("tool error");
  const std::string written = capture.Finish();
  spdlog::set_default_logger(previous);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_NE(written.find("] [warning] library warning 7\n"), std::string::npos) << written;
  EXPECT_NE(written.find("] [error] tool error\n"), std::string::npos) << written;
  EXPECT_EQ(written.find("info"), std::string::npos) << written;
  // "[14:02:11.123] [warning] ...": the tools' pattern, on the library's lines too.
  EXPECT_EQ(written[0], '[');
  EXPECT_EQ(written.substr(13, 12), "] [warning] ") << written;
}

TEST(LogLevelTest, Names) {
  EXPECT_EQ(LogLevelName(LogLevel::kTrace), "trace");
  EXPECT_EQ(LogLevelName(LogLevel::kDebug), "debug");
  EXPECT_EQ(LogLevelName(LogLevel::kInfo), "info");
  EXPECT_EQ(LogLevelName(LogLevel::kWarn), "warn");
  EXPECT_EQ(LogLevelName(LogLevel::kError), "error");
  EXPECT_EQ(LogLevelName(LogLevel::kOff), "off");
  EXPECT_EQ(LogLevelName(static_cast<LogLevel>(9)), "unknown");
}

}  // namespace
}  // namespace tributary
