// SecurityLog: security events reach the default log level, and a flood of them is summarized per
// window instead of flooding the log.
#include "protocol/security_log.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/core/log_capture.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

class SecurityLogTest : public ::testing::Test {
 protected:
  std::vector<std::string> Lines() { return capture_.lines(); }

  // The programs' default level.
  testing::LogCapture capture_{LogLevel::kInfo};
};

TEST_F(SecurityLogTest, FirstEventsAreWarningsAndTheRestAreSummarizedPerWindow) {
  const auto t0 = SecurityLog::Clock::now();
  {
    SecurityLog log(60s);
    for (int i = 0; i < 500; ++i)
      log.Note("no ClientHello in time", "127.0.0.2", "sent nothing within 2000 ms", t0 + 1s);
    log.Note("TLS handshake failed", "10.0.0.5", "certificate verify failed", t0 + 2s);
    log.Note("no ClientHello in time", "10.0.0.5", "sent nothing within 2000 ms", t0 + 3s);
    EXPECT_EQ(Lines().size(), 3u);  // one per (reason, address), at once
    log.Flush(false, t0 + 30s);     // the window is not over: nothing yet
    EXPECT_EQ(Lines().size(), 3u);
    log.Flush(false, t0 + 61s);
    const std::map<std::string, uint64_t> totals = log.Totals();
    EXPECT_EQ(totals.at("no ClientHello in time"), 501u);
    EXPECT_EQ(totals.at("TLS handshake failed"), 1u);
  }
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 4u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0],
            "warn|security: no ClientHello in time from 127.0.0.2: sent nothing within 2000 ms");
  EXPECT_EQ(lines[1],
            "warn|security: TLS handshake failed from 10.0.0.5: certificate verify "
            "failed");
  EXPECT_EQ(lines[3],
            "warn|security: in the last 60 s: 499 more x 'no ClientHello in time' "
            "from 127.0.0.2 (1 shown above)");
}

// Many clients behind one address (a NAT, an aggregator): the summary names the first few of the
// others, not only the one shown, and says when there were more.
TEST_F(SecurityLogTest, TheSummaryNamesTheFirstOtherDetailsOfItsPair) {
  const auto t0 = SecurityLog::Clock::now();
  {
    SecurityLog log(60s);
    for (const char* who : {"edge-1", "edge-2", "edge-2", "edge-3", "edge-1", "edge-4", "edge-5"})
      log.Note("aggregator member refused", "10.0.0.9",
               std::string("client '") + who + "' refused: its layout is not the run's", t0 + 1s);
    log.Flush(false, t0 + 61s);
  }
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[1],
            "warn|security: in the last 60 s: 6 more x 'aggregator member refused' from 10.0.0.9 "
            "(1 shown above); others: client 'edge-2' refused: its layout is not the run's; "
            "client 'edge-3' refused: its layout is not the run's; client 'edge-4' refused: its "
            "layout is not the run's; ...");
}

TEST(SourceAddressTest, DropsThePort) {
  EXPECT_EQ(SourceAddress("127.0.0.2:41522"), "127.0.0.2");
  EXPECT_EQ(SourceAddress("[::1]:7700"), "::1");
  EXPECT_EQ(SourceAddress("unknown"), "unknown");
}

}  // namespace
}  // namespace tributary
