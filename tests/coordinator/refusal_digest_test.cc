// RefusalDigest: every client refused at Hello is named, and a flood of refusals makes a bounded
// number of events. Time is passed in; nothing sleeps.
#include "coordinator/refusal_digest.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

using namespace std::chrono_literals;

ClientRefused Refusal(const std::string& client, const std::string& code = "LAYOUT_MISMATCH",
                      const std::string& reason = "the client's model layout is not this run's",
                      const std::string& address = "127.0.0.1") {
  return ClientRefused{client, address, reason, code};
}

// Issue 27, item 5: the second client refused from one address was only counted in the log.
TEST(RefusalDigestTest, TwoClientsFromOneAddressAreBothNamedAtOnce) {
  RefusalDigest digest(10s);
  const TimePoint t0{};
  std::vector<ClientRefused> first = digest.Note(Refusal("edge-0"), t0);
  std::vector<ClientRefused> second = digest.Note(Refusal("edge-1"), t0 + 100ms);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first[0].client, "edge-0");
  EXPECT_EQ(second[0].client, "edge-1");
  for (const ClientRefused& e : {first[0], second[0]}) {
    EXPECT_EQ(e.address, "127.0.0.1");
    EXPECT_EQ(e.code, "LAYOUT_MISMATCH");
    EXPECT_EQ(e.reason, "the client's model layout is not this run's");
    EXPECT_EQ(e.count, 1u);
    EXPECT_EQ(e.seconds, 0.0);
  }
  // Nothing else was counted: the window's end adds nothing.
  EXPECT_TRUE(digest.Flush(t0 + 1h, /*force=*/true).empty());
}

TEST(RefusalDigestTest, AFloodFromOneClientIsOneEventAtOnceAndOneSummaryPerWindow) {
  RefusalDigest digest(10s);
  const TimePoint t0{};
  size_t events = 0;
  for (int i = 0; i < 1000; ++i) {
    std::vector<ClientRefused> out =
        digest.Note(Refusal("mallory", "UNSUPPORTED_VERSION", "version " + std::to_string(i),
                            "10.0.0." + std::to_string(i % 7)),
                    t0 + i * 5ms);  // 5 s in all: one window
    events += out.size();
  }
  EXPECT_EQ(events, 1u);
  EXPECT_TRUE(digest.Flush(t0 + 9s).empty());  // the window is not over
  std::vector<ClientRefused> summary = digest.Flush(t0 + 10s);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].client, "mallory");
  EXPECT_EQ(summary[0].count, 999u);
  EXPECT_DOUBLE_EQ(summary[0].seconds, 10.0);
  EXPECT_EQ(summary[0].reason, "version 0");    // the first reason, which the event at once named
  EXPECT_EQ(summary[0].address, "10.0.0.5");    // the latest address: 999 % 7
  EXPECT_TRUE(digest.Flush(t0 + 30s).empty());  // nothing since
  // The next window names the client again at once.
  ASSERT_EQ(digest.Note(Refusal("mallory", "UNSUPPORTED_VERSION"), t0 + 31s).size(), 1u);
}

TEST(RefusalDigestTest, ANoteAfterTheWindowReportsItsSummaryFirst) {
  RefusalDigest digest(10s);
  const TimePoint t0{};
  digest.Note(Refusal("a"), t0);
  digest.Note(Refusal("a"), t0 + 1s);
  digest.Note(Refusal("a", "PROTOCOL_VIOLATION", "codec"), t0 + 2s);  // another group
  std::vector<ClientRefused> out = digest.Note(Refusal("b"), t0 + 12s);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].client, "a");  // the summary of the window that is over
  EXPECT_EQ(out[0].code, "LAYOUT_MISMATCH");
  EXPECT_EQ(out[0].count, 1u);
  EXPECT_DOUBLE_EQ(out[0].seconds, 12.0);
  EXPECT_EQ(out[1].client, "b");  // then this one, as it came
  EXPECT_EQ(out[1].count, 1u);
  EXPECT_EQ(out[1].seconds, 0.0);
}

TEST(RefusalDigestTest, GroupsBeyondTheCapAreCountedTogetherAndLongReasonsAreCut) {
  RefusalDigest digest(10s, /*max_groups=*/3);
  const TimePoint t0{};
  size_t at_once = 0;
  for (int i = 0; i < 50; ++i)
    at_once +=
        digest
            .Note(Refusal("c" + std::to_string(i), "LAYOUT_MISMATCH", std::string(5000, 'x')),
                  t0 + i * 1ms)
            .size();
  EXPECT_EQ(at_once, 3u);
  std::vector<ClientRefused> end = digest.Flush(t0 + 1s, /*force=*/true);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].client, "*");
  EXPECT_EQ(end[0].count, 47u);
  EXPECT_DOUBLE_EQ(end[0].seconds, 1.0);
  EXPECT_EQ(end[0].reason.size(), RefusalDigest::kMaxReasonBytes);
}

}  // namespace
}  // namespace tributary
