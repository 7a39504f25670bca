// SecurityLog: security events reach the default log level, and a flood of them is summarized per
// window instead of flooding the log.
#include "protocol/security_log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace tributary {
namespace {

using namespace std::chrono_literals;

class SecurityLogTest : public ::testing::Test {
 protected:
  SecurityLogTest() {
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    sink_->set_pattern("%l %v");
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
    spdlog::set_level(spdlog::level::info);  // the default level
  }
  ~SecurityLogTest() override { spdlog::set_default_logger(previous_); }
  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }

  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
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
  ASSERT_EQ(lines.size(), 4u) << out_.str();
  EXPECT_EQ(lines[0],
            "warning security: no ClientHello in time from 127.0.0.2: sent nothing within 2000 ms");
  EXPECT_EQ(lines[1],
            "warning security: TLS handshake failed from 10.0.0.5: certificate verify "
            "failed");
  EXPECT_EQ(lines[3],
            "warning security: in the last 60 s: 499 more x 'no ClientHello in time' "
            "from 127.0.0.2 (1 shown above)");
}

TEST(SourceAddressTest, DropsThePort) {
  EXPECT_EQ(SourceAddress("127.0.0.2:41522"), "127.0.0.2");
  EXPECT_EQ(SourceAddress("[::1]:7700"), "::1");
  EXPECT_EQ(SourceAddress("unknown"), "unknown");
}

}  // namespace
}  // namespace tributary
