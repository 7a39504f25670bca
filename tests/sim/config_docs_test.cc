// The key tables in docs/ are the programs' schemas: docs/operations.md lists
// tributary-coordinator's and tributary-client's keys and docs/simulation.md tributary-sim's, each
// between
//   <!-- keys: PROGRAM -->  and  <!-- end keys -->
// as rows `| `key` | `default` | `--flag` | what it does |`. This test compares them with
// BindCoordinatorConfig, BindClientConfig and BindSimConfig key by key, and prints the table the
// schema gives when they differ (paste it over the old one).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../core/read_text_file.h"
#include "client/client_config.h"
#include "coordinator/coordinator_config.h"
#include "sim/deploy.h"
#include "sim/sim_config.h"

namespace tributary {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("TRIBUTARY_SOURCE_DIR");
  return dir ? dir : ".";
}

std::string Cell(const std::string& text) { return text.empty() ? "" : "`" + text + "`"; }

// The rows the schema gives, in binding order.
std::vector<std::string> SchemaRows(const ConfigSchema& schema) {
  std::vector<std::string> rows;
  for (const ConfigSchema::Key* k : schema.keys()) {
    if (!k->refusal().empty()) continue;
    rows.push_back("| " + Cell(k->name()) + " | " + Cell(k->default_text()) + " | " +
                   Cell(k->flag()) + " | " + k->help() + " |");
  }
  return rows;
}

// The rows between the markers of `program` in `doc`.
std::vector<std::string> DocRows(const std::string& doc, const std::string& program) {
  std::vector<std::string> rows;
  const std::string begin = "<!-- keys: " + program + " -->";
  size_t at = doc.find(begin);
  if (at == std::string::npos) return rows;
  const size_t end = doc.find("<!-- end keys -->", at);
  std::istringstream in(doc.substr(at + begin.size(), end - at - begin.size()));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) == 0) rows.push_back(line);
  }
  return rows;
}

void ExpectDocumented(const ConfigSchema& schema, const std::string& doc_file) {
  const std::string doc = testing::ReadTextFile(SourceDir() + "/" + doc_file);
  ASSERT_FALSE(doc.empty()) << "cannot read " << doc_file;
  const std::vector<std::string> want = SchemaRows(schema), have = DocRows(doc, schema.program());
  std::string table = "<!-- keys: " + schema.program() +
                      " -->\n| key | default | flag | what it does |\n|---|---|---|---|\n";
  for (const std::string& r : want) table += r + "\n";
  table += "<!-- end keys -->\n";
  EXPECT_EQ(have, want) << doc_file << " does not list " << schema.program()
                        << "'s keys as its schema does; the table should read:\n"
                        << table;
}

TEST(ConfigDocsTest, OperationsListsTheCoordinatorsAndTheClientsKeys) {
  CoordinatorConfig coordinator;
  ConfigSchema a("tributary-coordinator");
  BindCoordinatorConfig(a, &coordinator);
  ExpectDocumented(a, "docs/operations.md");
  ClientConfig client;
  ConfigSchema b("tributary-client");
  BindClientConfig(b, &client);
  ExpectDocumented(b, "docs/operations.md");
}

TEST(ConfigDocsTest, SimulationListsTheSimulatorsKeys) {
  SimConfig sim;
  ConfigSchema s("tributary-sim");
  BindSimConfig(s, &sim);
  ExpectDocumented(s, "docs/simulation.md");
}

TEST(ConfigDocsTest, TheExampleConfigsLoadAndValidate) {
  CoordinatorConfig coordinator;
  ConfigSchema a("tributary-coordinator");
  BindCoordinatorConfig(a, &coordinator);
  Result<Config> file = Config::LoadFile(SourceDir() + "/examples/configs/coordinator.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(a.Load(*file).ok()) << a.Load(*file);
  coordinator.ResolveOutputs();
  EXPECT_TRUE(coordinator.Validate().ok()) << coordinator.Validate();
  EXPECT_EQ(coordinator.run.round.rounds, 20);

  SimConfig sim;
  ConfigSchema s("tributary-sim");
  BindSimConfig(s, &sim);
  file = Config::LoadFile(SourceDir() + "/examples/configs/sim.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(s.Load(*file).ok()) << s.Load(*file);
  EXPECT_TRUE(sim.Validate().ok()) << sim.Validate();
  EXPECT_EQ(sim.run.round.rounds, 100);
  EXPECT_EQ(sim.data.num_clients, 100);

  // The deployment demo (scripts/demo --deploy) is one deployment mode accepts; the demo's own
  // file is not (its [hetero] section), and the refusal names the key and the file to use.
  SimConfig deploy;
  ConfigSchema d("tributary-sim");
  BindSimConfig(d, &deploy);
  file = Config::LoadFile(SourceDir() + "/examples/configs/deploy.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(d.Load(*file).ok()) << d.Load(*file);
  EXPECT_TRUE(CheckDeployable(deploy).ok()) << CheckDeployable(deploy);
  EXPECT_EQ(deploy.data.num_clients, 5);
  const Status demo = CheckDeployable(sim);
  EXPECT_NE(demo.message().find("key 'hetero."), std::string::npos) << demo;
  EXPECT_NE(demo.message().find("examples/configs/deploy.toml"), std::string::npos) << demo;
}

TEST(ConfigDocsTest, SharedSettingsHaveTheSameKeyInEveryProgram) {
  // The run (coordinator and simulator), the data (client and simulator) and the model (all
  // three): one name each, in every program that has the setting.
  CoordinatorConfig cc;
  ClientConfig cl;
  SimConfig sc;
  ConfigSchema c("tributary-coordinator"), l("tributary-client"), s("tributary-sim");
  BindCoordinatorConfig(c, &cc);
  BindClientConfig(l, &cl);
  BindSimConfig(s, &sc);
  for (const char* key : {"run.model", "run.init_seed", "data.dataset", "data.dir",
                          "data.train_examples", "data.test_examples", "data.seed"}) {
    EXPECT_NE(c.Find(key), nullptr) << key;
    EXPECT_NE(l.Find(key), nullptr) << key;
    EXPECT_NE(s.Find(key), nullptr) << key;
  }
  for (const ConfigSchema::Key* k : c.keys()) {
    const std::string name = k->name();
    if (name.rfind("run.", 0) == 0 || name.rfind("fit.", 0) == 0 || name.rfind("eval.", 0) == 0) {
      EXPECT_TRUE(s.Find(name) != nullptr || name == "eval.threads") << name;
    }
  }
  for (const char* key : {"data.partition", "data.num_clients"}) {
    EXPECT_NE(l.Find(key), nullptr) << key;
    EXPECT_NE(s.Find(key), nullptr) << key;
  }
  EXPECT_NE(c.Find("net.heartbeat_interval_s"), nullptr);
  EXPECT_NE(l.Find("net.heartbeat_interval_s"), nullptr);
}

}  // namespace
}  // namespace tributary
