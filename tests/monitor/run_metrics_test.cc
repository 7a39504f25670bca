// RunMetrics (monitor/run_metrics.h): run events in, Prometheus text out, with the values the
// events carry.
#include "monitor/run_metrics.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace tributary {
namespace {

// The value of the sample line that starts with `series` ("name" or "name{labels}"), or -1.
double Sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST(RunMetricsTest, EventsBecomeTheirMetrics) {
  RunMetrics m;
  int64_t connected = 5, idle = 2;
  m.set_client_sampler([&] { return std::pair<int64_t, int64_t>(connected, idle); });
  int64_t cooling = 2;
  m.set_cooling_sampler([&] { return cooling; });
  RunStarted started;
  started.model = "mlp";
  started.strategy = "fedavg";
  started.codec = "q8";
  started.download_codec = "dense";
  started.rounds = 10;
  m.OnEvent(started);
  m.OnEvent(RoundOpened{1, 1, 3, 0});
  std::string text = m.Scrape();
  EXPECT_EQ(Sample(text, "tributary_round"), 1);
  EXPECT_EQ(Sample(text, "tributary_round_open"), 1);
  EXPECT_EQ(Sample(text, "tributary_run_rounds"), 10);
  EXPECT_EQ(Sample(text, "tributary_clients{state=\"connected\"}"), 5);
  EXPECT_EQ(Sample(text, "tributary_clients{state=\"training\"}"), 3);
  EXPECT_EQ(Sample(text, "tributary_clients_cooling"), 2);
  EXPECT_NE(text.find("tributary_run_info{"), std::string::npos);
  EXPECT_NE(text.find("codec=\"q8\""), std::string::npos);

  m.OnEvent(UpdateAccepted{1, "a", 100, 4000, std::nullopt});
  m.OnEvent(UpdateAccepted{1, "b", 100, 4000, std::nullopt});
  // Two asynchronous updates, 0 and 3 versions stale.
  m.OnEvent(UpdateAccepted{1, "f", 100, 4000, UpdateStaleness{4, 0, 1.0}});
  m.OnEvent(UpdateAccepted{1, "g", 100, 4000, UpdateStaleness{1, 3, 0.5}});
  m.OnEvent(UpdateRefused{1, "c", "late: round 1 is closed", "FailedPrecondition"});
  m.OnEvent(UpdateRefused{1, "d", "bad bytes", "Corruption"});
  m.OnEvent(UpdateRefused{1, "e", "bad bytes again", "Corruption"});
  m.OnEvent(CheckpointWritten{1, "ck", "", 0.02});
  m.OnEvent(CheckpointWritten{1, "ck", "disk full", 0.0});
  m.OnEvent(Evaluated{1, 1, 0.75, 0.625, 100});
  RoundSummary s;
  s.round = 1;
  s.accepted = 2;
  s.dropped = 1;
  s.bytes_up = 8000;
  s.bytes_down = 12000;
  s.duration_s = 3.5;
  DpRoundReport dp;
  dp.epsilon = 1.25;
  s.dp = dp;
  s.split = SplitRoundReport{12, 384, 600'000, 590'000, 0.5};
  idle = 5;
  m.OnEvent(RoundClosed{s, std::nullopt});
  m.OnEvent(FederatedEvaluated{FederatedEvalSummary{1, 2, 200, 0.5, 0.875}});
  text = m.Scrape();
  EXPECT_EQ(Sample(text, "tributary_updates_accepted_total"), 4);
  EXPECT_EQ(Sample(text, "tributary_update_staleness_count"), 2);
  EXPECT_EQ(Sample(text, "tributary_update_staleness_sum"), 3);
  EXPECT_EQ(Sample(text, "tributary_update_staleness_bucket{le=\"2\"}"), 1);
  EXPECT_EQ(Sample(text, "tributary_updates_refused_total{code=\"Corruption\"}"), 2);
  EXPECT_EQ(Sample(text, "tributary_updates_refused_total{code=\"FailedPrecondition\"}"), 1);
  EXPECT_EQ(Sample(text, "tributary_rounds_closed_total"), 1);
  EXPECT_EQ(Sample(text, "tributary_round_open"), 0);
  EXPECT_EQ(Sample(text, "tributary_clients_dropped_total"), 1);
  EXPECT_EQ(Sample(text, "tributary_clients{state=\"training\"}"), 0);
  EXPECT_EQ(Sample(text, "tributary_transfer_bytes_total{codec=\"q8\",direction=\"up\"}"), 8000);
  EXPECT_EQ(Sample(text, "tributary_transfer_bytes_total{codec=\"dense\",direction=\"down\"}"),
            12000);
  EXPECT_EQ(Sample(text, "tributary_round_duration_seconds_count"), 1);
  EXPECT_EQ(Sample(text, "tributary_round_duration_seconds_sum"), 3.5);
  EXPECT_EQ(Sample(text, "tributary_round_duration_seconds_bucket{le=\"2.5\"}"), 0);
  EXPECT_EQ(Sample(text, "tributary_round_duration_seconds_bucket{le=\"5\"}"), 1);
  EXPECT_EQ(Sample(text, "tributary_checkpoint_write_seconds_count"), 1);
  EXPECT_EQ(Sample(text, "tributary_checkpoint_failures_total"), 1);
  EXPECT_EQ(Sample(text, "tributary_evaluation_loss{source=\"server\"}"), 0.75);
  EXPECT_EQ(Sample(text, "tributary_evaluation_accuracy{source=\"federated\"}"), 0.875);
  EXPECT_EQ(Sample(text, "tributary_dp_epsilon"), 1.25);
  EXPECT_EQ(Sample(text, "tributary_split_batches_total"), 12);
  EXPECT_EQ(Sample(text, "tributary_split_samples_total"), 384);
  EXPECT_EQ(Sample(text, "tributary_split_server_seconds_total"), 0.5);
  EXPECT_EQ(Sample(text, "tributary_split_bytes_total{direction=\"up\"}"), 600'000);
  EXPECT_EQ(Sample(text, "tributary_split_bytes_total{direction=\"down\"}"), 590'000);

  m.OnEvent(RoundFailed{2, 1, "too few updates"});
  m.OnEvent(RunFinished{1, true, "OK", 0, "final.safetensors", ""});
  text = m.Scrape();
  EXPECT_EQ(Sample(text, "tributary_round_failures_total"), 1);
  EXPECT_EQ(Sample(text, "tributary_run_finished"), 1);
  EXPECT_EQ(Sample(text, "tributary_run_ok"), 1);
  // Conventions: every family has HELP and TYPE lines, counters end in _total.
  EXPECT_NE(text.find("# TYPE tributary_updates_refused_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE tributary_round_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("# HELP tributary_round "), std::string::npos);
}

}  // namespace
}  // namespace tributary
