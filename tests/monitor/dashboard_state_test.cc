// DashboardState (monitor/dashboard_state.h): run events in, the dashboard's snapshot and deltas
// out, with the numbers the events carry.
#include "monitor/dashboard_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tributary {
namespace {

RoundClosed Closed(uint64_t round, double seconds, std::optional<Evaluated> eval = std::nullopt) {
  RoundClosed c;
  c.summary.round = round;
  c.summary.model_version = round;
  c.summary.attempts = 1;
  c.summary.selected = 3;
  c.summary.accepted = 2;
  c.summary.refused = 1;
  c.summary.dropped = 0;
  c.summary.bytes_up = 1000 * round;
  c.summary.bytes_down = 5000;
  c.summary.duration_s = seconds;
  c.summary.client_metrics["train_loss"] = 1.0 / static_cast<double>(round);
  c.evaluation = eval;
  return c;
}

class DashboardStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_.set_wall_clock([this] { return now_; });
    state_.set_client_sampler([this] { return samples_; });
    state_.set_publisher([this](std::string d) { deltas_.push_back(nlohmann::json::parse(d)); });
    RunStarted s;
    s.model = "cnn";
    s.strategy = "fedavg";
    s.codec = "q8";
    s.rounds = 5;
    s.parameters = 1234;
    samples_ = {{"alice", false, 100.0}, {"bob", false, 100.0}, {"carol", false, 100.0}};
    state_.OnEvent(s);
  }

  DashboardState state_;
  double now_ = 100.0;
  std::vector<DashboardState::ClientSample> samples_;
  std::vector<nlohmann::json> deltas_;
};

TEST_F(DashboardStateTest, ARoundBecomesARowAndEveryClientARow) {
  samples_ = {{"alice", true, 101.0}, {"bob", true, 101.0}, {"carol", true, 101.0}};
  now_ = 101.0;
  state_.OnEvent(RoundOpened{1, 1, 3, 0});
  now_ = 103.0;
  state_.OnEvent(UpdateAccepted{1, "alice", 60, 900, std::nullopt});
  state_.OnEvent(UpdateAccepted{1, "bob", 40, 900, std::nullopt});
  state_.OnEvent(UpdateRefused{1, "carol", "the update's norm is not finite", "InvalidArgument"});
  samples_ = {{"alice", false, 103.0}, {"bob", false, 103.0}};  // carol left
  Evaluated eval{1, 1, 0.75, 0.71, 10000};
  state_.OnEvent(Closed(1, 2.5, eval));

  const nlohmann::json snap = nlohmann::json::parse(state_.Snapshot());
  EXPECT_EQ(snap["kind"], "snapshot");
  EXPECT_EQ(snap["seq"].get<uint64_t>(), deltas_.size() + 0) << "one seq per published delta";
  EXPECT_EQ(snap["run"]["model"], "cnn");
  EXPECT_EQ(snap["run"]["rounds_total"], 5);
  EXPECT_EQ(snap["run"]["rounds_done"], 1);
  EXPECT_EQ(snap["run"]["state"], "waiting");
  EXPECT_EQ(snap["run"]["clients_connected"], 2);
  EXPECT_EQ(snap["run"]["clients_idle"], 2);
  ASSERT_EQ(snap["rounds"].size(), 1u);
  const nlohmann::json& row = snap["rounds"][0];
  EXPECT_EQ(row["round"], 1);
  EXPECT_EQ(row["accepted"], 2);
  EXPECT_EQ(row["refused"], 1);
  EXPECT_EQ(row["bytes_up"], 1000);
  EXPECT_EQ(row["bytes_down"], 5000);
  EXPECT_DOUBLE_EQ(row["duration_seconds"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(row["accuracy"].get<double>(), 0.71);
  EXPECT_DOUBLE_EQ(row["loss"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(row["train_loss"].get<double>(), 1.0);
  ASSERT_EQ(snap["clients"].size(), 3u);
  EXPECT_EQ(snap["clients"][0]["id"], "alice");
  EXPECT_EQ(snap["clients"][0]["accepted"], 1);
  EXPECT_EQ(snap["clients"][0]["state"], "idle");
  EXPECT_DOUBLE_EQ(snap["clients"][0]["last_seen"].get<double>(), 103.0);
  EXPECT_EQ(snap["clients"][2]["id"], "carol");
  EXPECT_EQ(snap["clients"][2]["state"], "left");
  EXPECT_EQ(snap["clients"][2]["refused"], 1);
  EXPECT_EQ(snap["clients"][2]["last_refusal"], "InvalidArgument: the update's norm is not finite");
}

TEST_F(DashboardStateTest, DeltasCarryOnlyWhatChangedInSeqOrder) {
  deltas_.clear();
  samples_ = {{"alice", true, 101.0}, {"bob", true, 101.0}, {"carol", false, 100.0}};
  state_.OnEvent(RoundOpened{1, 1, 2, 0});
  ASSERT_EQ(deltas_.size(), 1u);
  EXPECT_EQ(deltas_[0]["kind"], "delta");
  EXPECT_EQ(deltas_[0]["run"]["round"], 1);
  EXPECT_EQ(deltas_[0]["run"]["round_open"], true);
  EXPECT_EQ(deltas_[0]["run"]["state"], "training");
  ASSERT_EQ(deltas_[0]["clients"].size(), 2u) << deltas_[0].dump() << ": carol did not change";
  EXPECT_FALSE(deltas_[0].contains("rounds"));

  state_.OnEvent(UpdateAccepted{1, "bob", 40, 900, std::nullopt});
  ASSERT_EQ(deltas_.size(), 2u);
  EXPECT_EQ(deltas_[1]["run"]["received"], 1);
  ASSERT_EQ(deltas_[1]["clients"].size(), 1u);
  EXPECT_EQ(deltas_[1]["clients"][0]["id"], "bob");
  EXPECT_EQ(deltas_[1]["clients"][0]["accepted"], 1);

  state_.OnEvent(Closed(1, 1.0));
  ASSERT_EQ(deltas_.size(), 3u);
  ASSERT_EQ(deltas_[2]["rounds"].size(), 1u);
  EXPECT_EQ(deltas_[2]["rounds"][0]["round"], 1);
  EXPECT_FALSE(deltas_[2]["rounds"][0].contains("accuracy")) << "not evaluated this round";
  for (size_t i = 1; i < deltas_.size(); ++i)
    EXPECT_EQ(deltas_[i]["seq"].get<uint64_t>(), deltas_[i - 1]["seq"].get<uint64_t>() + 1);

  // A federated evaluation adds to its round's row; the row stays whole.
  FederatedEvaluated fed;
  fed.summary = {1, 2, 100, 0.5, 0.8};
  state_.OnEvent(fed);
  ASSERT_EQ(deltas_.size(), 4u);
  EXPECT_DOUBLE_EQ(deltas_[3]["rounds"][0]["federated_accuracy"].get<double>(), 0.8);
  EXPECT_EQ(deltas_[3]["rounds"][0]["bytes_up"], 1000);
}

TEST_F(DashboardStateTest, TheEndAndPrivacyAreShownAndBadBytesDoNotThrow) {
  RoundClosed c = Closed(1, 1.0);
  DpRoundReport dp;
  dp.epsilon = 0.42;
  c.summary.dp = dp;
  c.summary.split = SplitRoundReport{4, 128, 3000, 1096, 0.25};
  state_.OnEvent(c);
  state_.OnEvent(UpdateRefused{1, std::string("mallory\xff\xfe"), "bad \xc3", "DataLoss"});
  RunFinished f;
  f.rounds_done = 1;
  f.ok = false;
  f.status = "Aborted: too few clients";
  state_.OnEvent(f);
  const nlohmann::json snap = nlohmann::json::parse(state_.Snapshot());
  EXPECT_DOUBLE_EQ(snap["run"]["epsilon"].get<double>(), 0.42);
  EXPECT_DOUBLE_EQ(snap["rounds"][0]["epsilon"].get<double>(), 0.42);
  EXPECT_EQ(snap["rounds"][0]["split_batches"], 4);
  EXPECT_DOUBLE_EQ(snap["rounds"][0]["split_bytes_per_batch"].get<double>(), 1024.0);
  EXPECT_DOUBLE_EQ(snap["rounds"][0]["split_server_seconds"].get<double>(), 0.25);
  EXPECT_EQ(snap["run"]["state"], "failed");
  EXPECT_EQ(snap["run"]["status"], "Aborted: too few clients");
  EXPECT_EQ(snap["clients"].size(), 4u);
}

TEST_F(DashboardStateTest, ClientsThatJoinBetweenEventsShowAtTheNextRefresh) {
  deltas_.clear();
  state_.RefreshClients();
  EXPECT_TRUE(deltas_.empty()) << "nothing changed, nothing sent";
  samples_.push_back({"dave", false, 100.5});
  state_.RefreshClients();
  ASSERT_EQ(deltas_.size(), 1u);
  ASSERT_EQ(deltas_[0]["clients"].size(), 1u);
  EXPECT_EQ(deltas_[0]["clients"][0]["id"], "dave");
  EXPECT_EQ(deltas_[0]["clients"][0]["state"], "idle");
  EXPECT_EQ(deltas_[0]["run"]["clients_connected"], 4);
  // Heard from again within a few seconds: not worth a delta; later, it is.
  samples_.back().last_seen = 102.0;
  state_.RefreshClients();
  EXPECT_EQ(deltas_.size(), 1u);
  samples_.back().last_seen = 110.0;
  state_.RefreshClients();
  ASSERT_EQ(deltas_.size(), 2u);
  EXPECT_DOUBLE_EQ(deltas_[1]["clients"][0]["last_seen"].get<double>(), 110.0);
  EXPECT_FALSE(deltas_[1].contains("run")) << "the counts did not change";
  samples_.pop_back();
  state_.RefreshClients();
  ASSERT_EQ(deltas_.size(), 3u);
  EXPECT_EQ(deltas_[2]["clients"][0]["state"], "left");
  EXPECT_EQ(nlohmann::json::parse(state_.Snapshot())["run"]["clients_connected"], 3);
}

// Issue 28, item 3: a client left out of selection after a miss shows it, with the round it may
// be selected again from, and the run's header counts the clients cooling down.
TEST_F(DashboardStateTest, AClientCoolingDownShowsUntilWhichRound) {
  samples_ = {{"alice", false, 101.0}, {"bob", false, 101.0, 4}, {"carol", false, 101.0, 6}};
  now_ = 101.0;
  state_.RefreshClients();
  const nlohmann::json snap = state_.SnapshotJson();
  EXPECT_EQ(snap["run"]["clients_cooling"], 2);
  std::map<std::string, uint64_t> until;
  for (const auto& c : snap["clients"]) until[c["id"]] = c["cooling_until"];
  EXPECT_EQ(until["alice"], 0u);
  EXPECT_EQ(until["bob"], 4u);
  EXPECT_EQ(until["carol"], 6u);
  ASSERT_FALSE(deltas_.empty());
  EXPECT_EQ(deltas_.back()["run"]["clients_cooling"], 2);
  EXPECT_EQ(deltas_.back()["clients"].size(), 2u);  // bob's and carol's rows changed
}

TEST(DashboardStateLimitTest, TheClientsTableIsBounded) {
  DashboardState state(2);
  std::vector<DashboardState::ClientSample> samples = {
      {"a", false, 1.0}, {"b", false, 1.0}, {"c", false, 1.0}, {"d", false, 1.0}};
  state.set_client_sampler([&] { return samples; });
  state.OnEvent(RoundOpened{1, 1, 2, 0});
  for (const char* id : {"a", "b", "c", "d", "c", "d"})
    state.OnEvent(UpdateAccepted{1, id, 1, 1, std::nullopt});
  state.OnEvent(RoundOpened{2, 1, 2, 0});
  nlohmann::json snap = state.SnapshotJson();
  EXPECT_EQ(snap["clients"].size(), 2u);
  EXPECT_EQ(snap["run"]["clients_untracked"], 2) << "the connected clients beyond the table";
  EXPECT_EQ(snap["run"]["clients_connected"], 4);
  samples.pop_back();
  state.OnEvent(RoundOpened{3, 1, 2, 0});
  snap = state.SnapshotJson();
  EXPECT_EQ(snap["run"]["clients_untracked"], 1);
}

}  // namespace
}  // namespace tributary
