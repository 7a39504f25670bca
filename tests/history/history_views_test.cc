// What `tributary runs` prints (history/history_views.h): the JSON fields scripts read and the
// text people read, from records.
#include "history/history_views.h"

#include <gtest/gtest.h>

#include "history/process_identity.h"

namespace tributary {
namespace {

RunRecord ViewedRun() {
  RunRecord r;
  r.id = 7;
  r.producer = "tributary-coordinator";
  r.config_json = R"({"run.model":"cnn","run.rounds":2})";
  r.model = "/models/mlp2.toml";
  r.strategy = "fedavg";
  r.rounds_total = 2;
  r.rounds_done = 1;
  r.status = "running";
  r.started_at = 1700000000;
  r.updated_at = 1700000090;
  r.host = "another-host.example";  // so "running" stays running
  r.pid = 42;
  r.checkpoint_dir = "/runs/ck";
  r.resumes = 1;
  return r;
}

RoundRecord SomeRound(int64_t n, bool closed) {
  RoundRecord r;
  r.run_id = 7;
  r.round = n;
  r.attempts = 1;
  r.opened_at = 1700000000 + 10 * static_cast<double>(n);
  if (closed) r.closed_at = r.opened_at + 2;
  r.duration_seconds = 2;
  r.accepted = 3;
  r.bytes_up = 2500000;
  r.eval_loss = 0.4432;
  r.eval_accuracy = 0.8421;
  r.checkpoint_path = closed ? "/runs/ck/checkpoint.bin" : "";
  return r;
}

TEST(HistoryViewsTest, JsonHasTheFieldsAndTheReportedStatus) {
  RunRecord run = ViewedRun();
  nlohmann::ordered_json j = RunJson(run);
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["status"], "running");
  EXPECT_EQ(j["rounds_done"], 1);
  EXPECT_EQ(j["resumes"], 1);
  EXPECT_TRUE(j["ended_at"].is_null());
  EXPECT_EQ(j["config"]["run.model"], "cnn");
  run.host = ThisProcess().host;
  run.pid = 0x7ffffff0;  // no such process here
  j = RunJson(run);
  EXPECT_EQ(j["status"], "interrupted");
  EXPECT_EQ(j["recorded_status"], "running");

  nlohmann::ordered_json round = RoundJson(SomeRound(1, true));
  EXPECT_EQ(round["round"], 1);
  EXPECT_EQ(round["bytes_up"], 2500000);
  EXPECT_DOUBLE_EQ(round["eval_accuracy"].get<double>(), 0.8421);
  EXPECT_TRUE(round["federated_loss"].is_null());
  EXPECT_EQ(round["checkpoint_path"], "/runs/ck/checkpoint.bin");

  nlohmann::ordered_json event =
      EventJson({7, 3, 1700000001.5, R"({"event":"update_accepted","round":1,"bytes":9})"});
  EXPECT_EQ(event["seq"], 3);
  EXPECT_EQ(event["event"], "update_accepted");
  EXPECT_EQ(event["bytes"], 9);
  EXPECT_EQ(EventJson({7, 4, 0, "not json"})["event"], "unreadable");
}

// An interrupted run is resumable only when it wrote a checkpoint: the note said "--resume" for
// every interrupted run, and the resume of one killed before its first checkpoint was refused.
TEST(HistoryViewsTest, AnInterruptedRunSaysResumeOnlyWhenItHasACheckpoint) {
  RunRecord run = ViewedRun();
  run.host = ThisProcess().host;
  run.pid = 0x7ffffff0;  // no such process here: interrupted
  const std::string with = RunText(run, {SomeRound(1, true)});
  EXPECT_NE(with.find("the checkpoints resume it (tributary-coordinator --resume)"),
            std::string::npos)
      << with;
  run.rounds_done = 0;
  run.resumes = 0;
  const std::string without = RunText(run, {SomeRound(1, false)});
  EXPECT_NE(without.find("before its first checkpoint: start it again"), std::string::npos)
      << without;
  EXPECT_EQ(without.find("--resume"), std::string::npos) << without;
}

TEST(HistoryViewsTest, TextShowsTheRunsAndTheirRounds) {
  const std::string table = RunsTable({ViewedRun()});
  EXPECT_NE(table.find("ID  STATUS"), std::string::npos) << table;
  EXPECT_NE(table.find(" 7  running  tributary-coordinator  mlp2.toml  fedavg    1/2"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("1m 30s"), std::string::npos) << table;

  const std::string text = RunText(ViewedRun(), {SomeRound(1, true), SomeRound(2, false)});
  EXPECT_NE(text.find("run 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 2 done"), std::string::npos) << text;
  EXPECT_NE(text.find("resumed:"), std::string::npos) << text;
  EXPECT_NE(text.find("/runs/ck/checkpoint.bin"), std::string::npos) << text;
  EXPECT_NE(text.find("2.4 MiB"), std::string::npos) << text;  // 2500000 bytes
  EXPECT_NE(text.find("84.21%"), std::string::npos) << text;
  EXPECT_NE(text.find("open"), std::string::npos) << text;

  const std::string line =
      EventLine({7, 12, 1700000001, R"({"event":"update_refused","round":1,"reason":"too late"})"});
  EXPECT_NE(line.find("   12  update_refused round=1 reason=\"too late\""), std::string::npos)
      << line;
}

}  // namespace
}  // namespace tributary
