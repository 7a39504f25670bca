// The report directory: rounds.csv, report.json and report.html are well formed and agree.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../client/temp_dir.h"
#include "../core/read_text_file.h"
#include "sim/report.h"

namespace tributary {
namespace {

SimResult ThreeRounds() {
  SimResult r;
  uint64_t up = 0;
  for (int i = 1; i <= 3; ++i) {
    SimRound x;
    x.round = static_cast<uint64_t>(i);
    x.attempts = 1;
    x.selected = x.accepted = 10;
    x.bytes_up = x.bytes_down = 1000000;
    up += x.bytes_up;
    x.cum_bytes_up = x.cum_bytes_down = up;
    x.sim_seconds = 2.5;
    x.sim_clock = 2.5 * i;
    x.wall_seconds = 0.5;
    x.wall_clock = 0.5 * i;
    x.evaluated = i != 2;  // round 2 not evaluated: an empty CSV cell, no JSON key
    x.test_accuracy = 0.5 + 0.1 * i;
    x.test_loss = 1.0 / i;
    x.train_loss = 2.0 / i;
    x.malicious = i - 1;
    r.rounds.push_back(x);
  }
  r.wall_seconds = 1.5;
  r.sim_seconds = 7.5;
  r.model_hash = 0xabcdef;
  return r;
}

// The rows report.html embeds for its charts (<script type='application/json' id='report-data'>).
nlohmann::json ReportData(const std::string& html) {
  const std::string open = "<script type='application/json' id='report-data'>";
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return nlohmann::json();
  const size_t end = html.find("</script>", begin);
  return nlohmann::json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

TEST(ReportTest, FilesAreWellFormedAndAgree) {
  testing::TempDir dir;
  SimConfig cfg;
  cfg.run.model = "mlp <&>";  // escaped in HTML
  cfg.target_accuracy = 0.75;
  SimResult result = ThreeRounds();
  result.target_round = 3;
  ASSERT_TRUE(WriteReport(dir.path(), cfg, result, {{"mode", "test"}}).ok());

  // rounds.csv: a header and one row per round, every row with the header's column count.
  std::istringstream csv(testing::ReadTextFile(dir.file("rounds.csv")));
  std::string line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].size(), 29u);
  EXPECT_EQ(rows[0][20], "malicious");
  EXPECT_EQ(rows[0][21], "secagg_bytes_up");
  EXPECT_EQ(rows[0][25], "secagg_server_seconds");
  EXPECT_EQ(rows[0][26], "epsilon");
  EXPECT_EQ(rows[0][28], "dp_clipped");
  EXPECT_EQ(rows[0][0], "round");
  EXPECT_EQ(rows[0][5], "dropped");
  EXPECT_EQ(rows[0][18], "test_accuracy");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].size(), rows[0].size()) << i;
  EXPECT_EQ(rows[2][18], "");  // round 2 was not evaluated
  EXPECT_NEAR(std::stod(rows[3][18]), 0.8, 1e-9);
  EXPECT_EQ(rows[3][11], "3000000");  // cum_bytes_up
  EXPECT_EQ(rows[2][20], "1");        // malicious clients selected in round 2
  EXPECT_EQ(rows[3][20], "2");

  // report.json parses and holds the config, every round and the totals.
  nlohmann::json j = nlohmann::json::parse(testing::ReadTextFile(dir.file("report.json")));
  // Every key of the simulator's schema, by its name.
  EXPECT_EQ(j["config"]["run.model"], "mlp <&>");
  EXPECT_EQ(j["config"]["run.rounds"], 20);
  EXPECT_EQ(j["config"]["fit.lr"], 0.05);
  EXPECT_EQ(j["config"]["attack.kind"], "none");
  EXPECT_FALSE(j["config"].contains("run.min_available")) << "refused keys are not listed";
  ASSERT_EQ(j["rounds"].size(), 3u);
  EXPECT_FALSE(j["rounds"][1].contains("test_accuracy"));
  EXPECT_NEAR(j["rounds"][2]["test_accuracy"].get<double>(), 0.8, 1e-12);
  EXPECT_EQ(j["rounds"][2]["malicious"], 2);
  EXPECT_EQ(j["totals"]["mode"], "test");
  EXPECT_EQ(j["totals"]["bytes_up"], 3000000);
  EXPECT_EQ(j["totals"]["target_round"], 3);
  EXPECT_NEAR(j["totals"]["final_test_accuracy"].get<double>(), 0.8, 1e-12);
  EXPECT_EQ(j["totals"]["model_hash"], "0000000000abcdef");

  // report.html: self-contained (nothing loaded from elsewhere), its rows embedded for the shared
  // chart code (the browser test, tests/integration/dashboard_browser_test.py, draws them), escaped
  // text.
  const std::string html = testing::ReadTextFile(dir.file("report.html"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("fetch("), std::string::npos);
  EXPECT_NE(html.find("TributaryCharts"), std::string::npos) << "the shared chart code is inline";
  EXPECT_NE(html.find("id='chart-round'"), std::string::npos);
  EXPECT_NE(html.find("id='chart-upload'"), std::string::npos);
  EXPECT_EQ(html.find("id='chart-epsilon'"), std::string::npos) << "no privacy chart without DP";
  const nlohmann::json data = ReportData(html);
  ASSERT_EQ(data["rounds"].size(), 3u);
  EXPECT_FALSE(data["dp"].get<bool>());
  int evaluated = 0;
  for (const auto& r : data["rounds"]) evaluated += r.contains("test_accuracy") ? 1 : 0;
  EXPECT_EQ(evaluated, 2);
  EXPECT_NEAR(data["rounds"][2]["test_accuracy"].get<double>(), 0.8, 1e-12);
  EXPECT_EQ(data["rounds"][2]["cum_bytes_up"], 3000000);
  EXPECT_NE(html.find("mlp &lt;&amp;&gt;"), std::string::npos);
  EXPECT_EQ(html.find("mlp <&>"), std::string::npos);
}

// The text between `open` (found at or after `from`) and the next '<'.
std::string TextAfter(const std::string& html, const std::string& open) {
  const size_t at = html.find(open);
  if (at == std::string::npos) return "(" + open + " not found)";
  const size_t begin = at + open.size();
  return html.substr(begin, html.find('<', begin) - begin);
}

// The numbers the issue found printed raw, as the page shows them now.
TEST(ReportTest, TotalsAreShownInUnitsAPersonReads) {
  using nlohmann::json;
  EXPECT_EQ(HumanTotal("bytes_down", json(796957000)), "760.0 MiB");
  EXPECT_EQ(HumanTotal("bytes_up", json(780)), "780 B");
  EXPECT_EQ(HumanTotal("final_test_loss", json(0.36859366667136323)), "0.3686");
  EXPECT_EQ(HumanTotal("final_test_accuracy", json(0.869)), "86.90%");
  EXPECT_EQ(HumanTotal("join_seconds", json(0.002056135999964681)), "2.1 ms");
  EXPECT_EQ(HumanTotal("wall_seconds", json(150.0)), "2.5 min");
  EXPECT_EQ(HumanTotal("client_rounds", json(1000)), "1000");
  EXPECT_EQ(HumanTotal("rss_bytes_per_idle_client", json(33177.6)), "32.4 KiB");
  EXPECT_EQ(HumanTotal("wall_ms_per_client_round", json(77.83)), "78 ms");
  EXPECT_EQ(HumanTotal("secagg_client_seconds_per_client_round", json(0.0083)), "8.3 ms");
  EXPECT_EQ(HumanTotal("target_round", json(0)), "not reached");
  EXPECT_EQ(HumanTotal("target_round", json(12)), "12");
  EXPECT_EQ(HumanTotal("epsilon", json(nullptr)), "\xE2\x88\x9E (no noise)");
  EXPECT_EQ(HumanTotal("delta", json(1.5e-7)), "1.5e-07");
  EXPECT_EQ(HumanTotal("model_hash", json("0000000000abcdef")), "0000000000abcdef");
}

// report.html leads with what a person asks first, in units, then the charts (a loss chart among
// them), the totals and only the keys this run changed (every key on demand).
TEST(ReportTest, TheReportLeadsWithASummaryAndShowsTheChangedKeys) {
  testing::TempDir dir;
  SimConfig cfg;
  cfg.run.model = "cnn";
  cfg.target_accuracy = 0.75;
  cfg.data.num_clients = 8;  // three keys changed from their defaults: these
  SimResult result = ThreeRounds();
  result.rounds[0].test_accuracy = 0.85;  // the best round is the first: 85%, not the last's 80%
  result.target_round = 1;
  result.target_wall_seconds = 0.5;
  ASSERT_TRUE(WriteReport(dir.path(), cfg, result, {{"client_rounds", 30}}).ok());
  const std::string html = testing::ReadTextFile(dir.file("report.html"));

  EXPECT_EQ(TextAfter(html, "<div data-summary='final_accuracy'>final test accuracy <b>"),
            "80.00%");
  EXPECT_EQ(TextAfter(html,
                      "<div data-summary='final_accuracy'>final test accuracy <b>80.00%</b>"
                      "<small>"),
            "round 3");
  EXPECT_EQ(TextAfter(html, "<div data-summary='best_accuracy'>best test accuracy <b>"), "85.00%");
  EXPECT_NE(html.find("85.00%</b><small>round 1</small>"), std::string::npos);
  EXPECT_EQ(TextAfter(html, "<div data-summary='target'>target 75.00% <b>"), "round 1");
  EXPECT_EQ(TextAfter(html, "<div data-summary='final_loss'>final test loss <b>"), "0.3333");
  EXPECT_EQ(TextAfter(html, "<div data-summary='rounds'>rounds <b>"), "3 of 20");
  EXPECT_EQ(TextAfter(html, "<div data-summary='bytes_up'>uploaded <b>"), "2.9 MiB");
  EXPECT_EQ(TextAfter(html, "<div data-summary='wall_time'>wall time <b>"), "1.50 s");
  EXPECT_LT(html.find("id='summary'"), html.find("id='chart-round'")) << "the summary comes first";

  // The totals in units, the raw number in the tooltip; report.json keeps the raw numbers.
  EXPECT_NE(html.find("<th>bytes_up</th><td title='3000000'>2.9 MiB</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>final_test_loss</th><td title='0.3333333333333333'>0.3333</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<th>client_rounds</th><td title='30'>30</td>"), std::string::npos);
  EXPECT_EQ(html.find("3000000</td>"), std::string::npos) << "no raw byte count shown";
  const nlohmann::json j = nlohmann::json::parse(testing::ReadTextFile(dir.file("report.json")));
  EXPECT_EQ(j["totals"]["bytes_up"], 3000000);
  EXPECT_EQ(j["totals"]["client_rounds"], 30);
  EXPECT_NEAR(j["totals"]["best_test_accuracy"].get<double>(), 0.85, 1e-12);
  EXPECT_EQ(j["totals"]["best_test_round"], 1);

  // A loss chart, from the rows' training and test losses.
  EXPECT_NE(html.find("id='chart-loss'"), std::string::npos);
  const nlohmann::json data = ReportData(html);
  EXPECT_NEAR(data["rounds"][1]["train_loss"].get<double>(), 1.0, 1e-12);
  EXPECT_FALSE(data["rounds"][1].contains("test_loss"));  // round 2 was not evaluated
  EXPECT_NEAR(data["rounds"][2]["test_loss"].get<double>(), 1.0 / 3, 1e-12);

  // The configuration: the changed keys (with their defaults) in a table of their own, every key
  // only inside the <details>.
  const size_t changed = html.find("<table id='config-changed'>");
  const size_t all = html.find("<details id='config-all'>");
  ASSERT_NE(changed, std::string::npos);
  ASSERT_NE(all, std::string::npos);
  const std::string changed_table = html.substr(changed, all - changed);
  EXPECT_NE(changed_table.find("<th>run.model</th><td>cnn</td><td>mlp</td>"), std::string::npos)
      << changed_table;
  EXPECT_NE(changed_table.find("<th>data.num_clients</th><td>8</td><td>100</td>"),
            std::string::npos);
  EXPECT_NE(changed_table.find("<th>sim.target_accuracy</th><td>0.75</td><td>0.0</td>"),
            std::string::npos)
      << changed_table;
  EXPECT_EQ(changed_table.find("attack.kind"), std::string::npos) << "a default is not listed";
  EXPECT_EQ(changed_table.find("dp.enabled"), std::string::npos);
  size_t rows = 0;
  for (size_t at = changed_table.find("<tr>"); at != std::string::npos;
       at = changed_table.find("<tr>", at + 1))
    ++rows;
  --rows;  // less the header row
  const size_t keys = j["config"].size();
  EXPECT_EQ(rows, 3u) << changed_table;
  EXPECT_NE(html.find("3 of the " + std::to_string(keys) + " keys differ from their defaults"),
            std::string::npos);
  EXPECT_NE(html.find("<summary>All " + std::to_string(keys) + " keys</summary>"),
            std::string::npos);
  EXPECT_NE(html.find("<th>attack.kind</th><td>none</td>", all), std::string::npos);
}

TEST(ReportTest, APrivateRunReportsEpsilonAndPlotsAccuracyAgainstIt) {
  testing::TempDir dir;
  SimConfig cfg;
  cfg.run.round.dp.enabled = true;
  cfg.run.round.dp.noise_multiplier = 1.2;
  cfg.data.num_clients = 3000;  // the default delta is 1 / 3000^1.1
  SimResult result = ThreeRounds();
  for (int i = 0; i < 3; ++i) {
    result.rounds[i].dp = true;
    result.rounds[i].epsilon = 0.25 * (i + 1);
    result.rounds[i].dp_clip_norm = 0.5;
    result.rounds[i].dp_clipped = 4;
  }
  result.stopped = "differential privacy: the run stops before round 4";
  cfg.run.round.dp.noise_seed = 90210;  // whoever knows it can remove the noise
  ASSERT_TRUE(WriteReport(dir.path(), cfg, result, nlohmann::json::object()).ok());

  const std::string csv = testing::ReadTextFile(dir.file("rounds.csv"));
  EXPECT_NE(csv.find(",0.750000,0.5,4\n"), std::string::npos) << csv;
  nlohmann::json j = nlohmann::json::parse(testing::ReadTextFile(dir.file("report.json")));
  EXPECT_EQ(j["rounds"][0]["epsilon"], 0.25);
  EXPECT_EQ(j["rounds"][2]["dp_clipped"], 4);
  EXPECT_EQ(j["totals"]["epsilon"], 0.75);
  EXPECT_NEAR(j["totals"]["delta"].get<double>(), std::pow(3000.0, -1.1), 1e-15);
  EXPECT_EQ(j["totals"]["noise_multiplier"], 1.2);
  EXPECT_EQ(j["totals"]["stopped"], result.stopped);
  // The schema marks dp.noise_seed secret: report.json and report.html never show its value.
  EXPECT_EQ(j["config"]["dp.noise_seed"], "<redacted>");
  EXPECT_EQ(j["config"]["dp.noise_multiplier"], 1.2) << "other keys are recorded as they are";

  // A third chart: accuracy against epsilon, one point per evaluated round.
  const std::string html = testing::ReadTextFile(dir.file("report.html"));
  EXPECT_NE(html.find("id='chart-epsilon'"), std::string::npos);
  const nlohmann::json data = ReportData(html);
  EXPECT_TRUE(data["dp"].get<bool>());
  ASSERT_EQ(data["rounds"].size(), 3u);
  EXPECT_EQ(data["rounds"][1]["epsilon"], 0.5);
  EXPECT_EQ(html.find("90210"), std::string::npos) << "the noise seed is in report.html";
}

// The partition (NIID-Bench's partitions and feature noise): every client in report.json, the first
// 100 in report.html's table, with each one's noise level.
TEST(ReportTest, ThePartitionIsKeptPerClientWithItsNoiseLevels) {
  testing::TempDir dir;
  SimConfig cfg;
  cfg.data.partition = "labels:2+noise:0.3";
  cfg.data.num_clients = 4;
  SimResult result = ThreeRounds();
  // Client k holds 10 + k examples of classes k and k + 1 (of 5).
  std::vector<uint8_t> labels;
  Partition parts(4);
  for (uint32_t k = 0; k < 4; ++k)
    for (uint32_t i = 0; i < 10 + k; ++i) {
      parts[k].push_back(static_cast<uint32_t>(labels.size()));
      labels.push_back(static_cast<uint8_t>(k + i % 2));
    }
  result.partition = ComputePartitionStats(parts, labels, 5);
  ASSERT_TRUE(WriteReport(dir.path(), cfg, result, nlohmann::json::object()).ok());
  nlohmann::json j = nlohmann::json::parse(testing::ReadTextFile(dir.file("report.json")));
  const nlohmann::json& p = j["partition"];
  EXPECT_EQ(p["spec"], "labels:2+noise:0.3");
  EXPECT_EQ(p["sizes"], nlohmann::json({10, 11, 12, 13}));
  EXPECT_EQ(p["class_counts"][3], nlohmann::json({0, 0, 0, 7, 6}));
  EXPECT_EQ(p["min_classes"], 2);
  EXPECT_EQ(p["max_classes"], 2);
  ASSERT_EQ(p["noise_levels"].size(), 4u);
  EXPECT_DOUBLE_EQ(p["noise_levels"][0].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(p["noise_levels"][2].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(p["noise_levels"][3].get<double>(), 0.3);
  const std::string html = testing::ReadTextFile(dir.file("report.html"));
  EXPECT_NE(html.find("<table id='partition'>"), std::string::npos);
  const std::string row = fmt::format(
      "<tr><th>3</th><td>13</td><td>0</td><td>0</td><td>0</td><td>7</td><td>6</td><td>{:.3f}</td>"
      "<td>0.3</td></tr>",
      result.partition->label_tv[3]);
  EXPECT_NE(html.find(row), std::string::npos) << html.substr(html.find("<h2>Partition"), 1500);
  EXPECT_NE(html.find("labels:2+noise:0.3: 4 clients, 46 examples"), std::string::npos);

  // Without a partition (replacement:N, or a population too large to list) there is none.
  result.partition.reset();
  ASSERT_TRUE(WriteReport(dir.path(), cfg, result, nlohmann::json::object()).ok());
  j = nlohmann::json::parse(testing::ReadTextFile(dir.file("report.json")));
  EXPECT_FALSE(j.contains("partition"));
  EXPECT_EQ(testing::ReadTextFile(dir.file("report.html")).find("id='partition'"),
            std::string::npos);
}

}  // namespace
}  // namespace tributary
