// RunEvents' JSON form: every event reads back to what was written (what deployment mode relies
// on), a diverged loss survives as null, and anything else is refused with a reason.
#include "coordinator/run_events.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tributary {
namespace {

std::vector<RunEvent> OneOfEach() {
  RoundSummary s;
  s.round = 4;
  s.model_version = 4;
  s.attempts = 2;
  s.selected = 10;
  s.accepted = 8;
  s.refused = 1;
  s.dropped = 1;
  s.bytes_down = 123456789012;
  s.bytes_up = 42;
  s.num_examples = 6000;
  s.duration_s = 2.5;
  s.client_metrics = {{"train_loss", 0.25}};
  Evaluated ev{4, 4, 0.4, 0.875, 10000};
  RoundSummary private_round = s;
  private_round.dp = DpRoundReport{1.5, 1.65, 0.0333, 12, 2.25, 0.8125, 14.0};
  return {
      RunStarted{"mlp",
                 "init.safetensors",
                 6,
                 "fedavg",
                 "topk(0.01)",
                 "q8",
                 20,
                 10,
                 199210,
                 3,
                 3,
                 0xfedcba9876543210u,
                 "runs/c/checkpoint.safetensors",
                 {"runs/c/checkpoint.1.safetensors: checksum mismatch"},
                 "0123456789abcdef0123456789abcdef",
                 "async"},
      RoundOpened{4, 2, 12, 3},
      UpdateAccepted{4, "edge-1", 600, 796840, std::nullopt},
      UpdateRefused{4, "edge-2", "late: round 4 is closed", "FailedPrecondition"},
      RoundFailed{4, 1, "deadline passed with 1 of the 8 updates needed"},
      CheckpointWritten{4, "runs/c/checkpoint.safetensors", "", 0.25},
      ev,
      RoundClosed{s, ev},
      RoundClosed{s, std::nullopt},
      FederatedEvaluated{FederatedEvalSummary{4, 9, 5000, 0.5, 0.8}},
      RunFinished{20, true, "OK", 0x0123456789abcdefu, "runs/c/final.safetensors", ""},
      RoundClosed{private_round, std::nullopt},
      RunFinished{7, true, "OK", 1, "final.safetensors",
                  "differential privacy: the run stops before round 8"},
      ClientRefused{"edge-7", "127.0.0.1", "the client's model layout is not this run's",
                    "LAYOUT_MISMATCH", 12, 10.5},
      UpdateAccepted{4, "edge-5", 300, 1024, std::nullopt, "agg-east"},  // through the tier
  };
}

TEST(RunEventsTest, EveryEventReadsBackFromItsJson) {
  for (const RunEvent& e : OneOfEach()) {
    const nlohmann::json j = ToJson(e);
    EXPECT_EQ(j["event"], RunEventName(e));
    // Through text, as the event log stores it.
    Result<RunEvent> back = RunEventFromJson(nlohmann::json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << j.dump() << ": " << back.status();
    EXPECT_EQ(back->index(), e.index());
    EXPECT_EQ(ToJson(*back), j);
  }
  const nlohmann::json closed = ToJson(OneOfEach()[7]);
  EXPECT_EQ(closed["test_accuracy"], 0.875);
  EXPECT_EQ(closed["dropped"], 1);
  EXPECT_EQ(closed["bytes_down"], 123456789012u);
  const nlohmann::json dp = ToJson(OneOfEach()[11]);
  EXPECT_EQ(dp["dp"]["epsilon"], 0.8125);
  EXPECT_EQ(dp["dp"]["clipped"], 12);
  const nlohmann::json refused = ToJson(OneOfEach()[13]);
  EXPECT_EQ(refused["event"], "client_refused");
  EXPECT_EQ(refused["client"], "edge-7");
  EXPECT_EQ(refused["count"], 12);
  // Which aggregator an update came through; a direct one has no "via" at all.
  EXPECT_EQ(ToJson(OneOfEach()[14])["via"], "agg-east");
  EXPECT_FALSE(ToJson(OneOfEach()[2]).contains("via"));
}

// The counts are "accepted" and "refused", as in update_accepted/update_refused, the dashboard,
// the history and the metrics; a line of an event log written when they were "completed" and
// "rejected" still reads, with the same numbers.
// An asynchronous run's events: an accepted update's version, staleness and weight, and a step's
// staleness figures, read back; a synchronous event carries none of them.
TEST(RunEventsTest, AsynchronousFieldsReadBackAndSynchronousEventsHaveNone) {
  RoundSummary step;
  step.round = 9;
  step.model_version = 9;
  step.accepted = 2;
  step.staleness = StalenessSummary{1.5, 3, {0, 1, 0, 1}, 7};
  const std::vector<RunEvent> events = {
      UpdateAccepted{9, "edge-3", 100, 4096, UpdateStaleness{6, 3, 0.5}},
      RoundClosed{step, std::nullopt}};
  for (const RunEvent& e : events) {
    const nlohmann::json j = ToJson(e);
    Result<RunEvent> back = RunEventFromJson(nlohmann::json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << j.dump() << ": " << back.status();
    EXPECT_EQ(ToJson(*back), j);
  }
  const nlohmann::json accepted = ToJson(events[0]);
  EXPECT_EQ(accepted["trained_on"], 6);
  EXPECT_EQ(accepted["staleness"], 3);
  EXPECT_EQ(accepted["staleness_weight"], 0.5);
  Result<RunEvent> read = RunEventFromJson(accepted);
  ASSERT_TRUE(read.ok()) << read.status();
  const auto& back = std::get<UpdateAccepted>(*read);
  ASSERT_TRUE(back.staleness.has_value());
  EXPECT_EQ(back.staleness->trained_on, 6u);
  const nlohmann::json closed = ToJson(events[1]);
  EXPECT_EQ(closed["staleness"]["mean"], 1.5);
  EXPECT_EQ(closed["staleness"]["histogram"], nlohmann::json::array({0, 1, 0, 1}));
  EXPECT_EQ(closed["staleness"]["in_flight"], 7);
  EXPECT_FALSE(ToJson(OneOfEach()[2]).contains("staleness"));
  EXPECT_FALSE(ToJson(OneOfEach()[7]).contains("staleness"));
}

// A split run's round: the server part's batches, bytes each way and compute, read back; a round
// of any other run has no "split".
TEST(RunEventsTest, SplitRoundFiguresReadBackAndOtherRoundsHaveNone) {
  RoundSummary s;
  s.round = 4;
  s.model_version = 4;
  s.split = SplitRoundReport{30, 960, 3'000'000, 2'900'000, 1.75};
  const RunEvent event = RoundClosed{s, std::nullopt};
  const nlohmann::json j = ToJson(event);
  EXPECT_EQ(j["split"]["batches"], 30);
  EXPECT_EQ(j["split"]["samples"], 960);
  EXPECT_EQ(j["split"]["bytes_in"], 3'000'000);
  EXPECT_EQ(j["split"]["bytes_out"], 2'900'000);
  EXPECT_EQ(j["split"]["server_seconds"], 1.75);
  Result<RunEvent> back = RunEventFromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  const auto& closed = std::get<RoundClosed>(*back);
  ASSERT_TRUE(closed.summary.split.has_value());
  EXPECT_EQ(closed.summary.split->bytes_out, 2'900'000u);
  EXPECT_EQ(ToJson(*back), j);
  EXPECT_FALSE(ToJson(OneOfEach()[7]).contains("split"));
}

TEST(RunEventsTest, RoundCountsAreAcceptedAndRefusedAndOldLogsStillRead) {
  const nlohmann::json closed = ToJson(OneOfEach()[7]);
  EXPECT_EQ(closed["accepted"], 8);
  EXPECT_EQ(closed["refused"], 1);
  EXPECT_FALSE(closed.contains("completed"));
  EXPECT_FALSE(closed.contains("rejected"));

  const std::string old_line =
      R"({"ts_ms":1764424331123,"event":"round_closed","round":3,"model_version":3,)"
      R"("attempts":1,"selected":10,"completed":9,"rejected":2,"dropped":1,"bytes_down":7800,)"
      R"("bytes_up":7020,"num_examples":5400,"duration_s":2.3,"client_metrics":{}})";
  Result<RunEvent> old = RunEventFromJson(nlohmann::json::parse(old_line));
  ASSERT_TRUE(old.ok()) << old.status();
  const RoundSummary& s = std::get<RoundClosed>(*old).summary;
  EXPECT_EQ(s.accepted, 9);
  EXPECT_EQ(s.refused, 2);
  EXPECT_EQ(s.dropped, 1);
  EXPECT_EQ(ToJson(*old)["accepted"], 9);  // written back under the new names

  // Neither name: refused, naming the new one.
  nlohmann::json neither = closed;
  neither.erase("accepted");
  Result<RunEvent> bad = RunEventFromJson(neither);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("accepted"), std::string::npos) << bad.status();
}

TEST(RunEventsTest, AnInfiniteEpsilonIsWrittenAsNullAndReadBackAsInfinity) {
  RoundSummary s;
  s.dp = DpRoundReport{};
  s.dp->epsilon = std::numeric_limits<double>::infinity();
  const std::string text = ToJson(RoundClosed{s, std::nullopt}).dump();
  EXPECT_NE(text.find("\"epsilon\":null"), std::string::npos) << text;
  Result<RunEvent> back = RunEventFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isinf(std::get<RoundClosed>(*back).summary.dp->epsilon));
}

TEST(RunEventsTest, ADivergedLossIsWrittenAsNullAndReadBackAsNaN) {
  Evaluated ev{1, 1, std::nan(""), 0.1, 10};
  const std::string text = ToJson(ev).dump();
  EXPECT_NE(text.find("\"loss\":null"), std::string::npos) << text;
  Result<RunEvent> back = RunEventFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::isnan(std::get<Evaluated>(*back).loss));
}

TEST(RunEventsTest, AnythingElseIsRefusedWithAReason) {
  EXPECT_NE(RunEventFromJson(nlohmann::json::array()).status().message().find("\"event\" name"),
            std::string::npos);
  EXPECT_NE(RunEventFromJson({{"event", "round_end"}})
                .status()
                .message()
                .find("unknown run event 'round_end'"),
            std::string::npos);
  EXPECT_NE(RunEventFromJson({{"event", "round_opened"}, {"round", 1}})
                .status()
                .message()
                .find("run event 'round_opened'"),
            std::string::npos);
}

}  // namespace
}  // namespace tributary
