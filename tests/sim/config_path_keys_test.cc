// Every key of tributary-coordinator, tributary-client and tributary-sim that names a file or a
// directory is a path key of its schema (ConfigSchema::Key::Path), so that all of them resolve a
// relative value in a config file against the file's directory, and the secrets are marked
// Secret(). The lists below are the programs' path keys: a new key that names a file belongs in
// them (and gets .Path() where it is bound).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "client/client_config.h"
#include "coordinator/coordinator_config.h"
#include "core/config.h"
#include "sim/sim_config.h"

namespace tributary {
namespace {

namespace fs = std::filesystem;

const std::set<std::string> kDataPaths = {"data.dir", "data.train", "data.train_labels",
                                          "data.test", "data.test_labels"};

std::set<std::string> With(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

const std::set<std::string> kRunPaths = {
    "run.model",        "run.initial_model",  "output.checkpoint_dir",
    "output.event_log", "output.final_model", "output.history"};

std::set<std::string> PathKeys(const ConfigSchema& s) {
  std::set<std::string> out;
  for (const ConfigSchema::Key* k : s.keys())
    if (k->is_path() && k->refusal().empty()) out.insert(k->name());
  return out;
}

std::set<std::string> SecretKeys(const ConfigSchema& s) {
  std::set<std::string> out;
  for (const ConfigSchema::Key* k : s.keys())
    if (k->secret()) out.insert(k->name());
  return out;
}

// Writes every path key of `s` as a relative path into DIR/conf/c.toml, loads it from another
// working directory, and expects each value to name DIR/conf/<the relative path>.
void ExpectResolvedAgainstTheFile(ConfigSchema& s) {
  char tmpl[] = "/tmp/trib_path_keys.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path root = fs::canonical(tmpl);
  fs::create_directories(root / "conf");
  std::string toml;
  for (const std::string& name : PathKeys(s)) {
    const std::string rel = name == "run.model" ? "models/m.toml" : "rel/" + name;
    toml += name + " = \"" + rel + "\"\n";
  }
  std::ofstream(root / "conf" / "c.toml") << toml;
  const fs::path cwd = fs::current_path();
  fs::current_path("/");  // not the file's directory
  Result<Config> file = Config::LoadFile((root / "conf" / "c.toml").string());
  Status loaded = file.ok() ? s.Load(*file) : file.status();
  fs::current_path(cwd);
  ASSERT_TRUE(loaded.ok()) << loaded;
  for (const std::string& name : PathKeys(s)) {
    const std::string rel = name == "run.model" ? "models/m.toml" : "rel/" + name;
    EXPECT_EQ(s.Find(name)->value_text(), TomlString((root / "conf" / rel).string())) << name;
  }
  fs::remove_all(root);
}

TEST(ConfigPathKeysTest, TheCoordinatorsFilesAndDirectoriesArePathKeys) {
  CoordinatorConfig c;
  ConfigSchema s("tributary-coordinator");
  BindCoordinatorConfig(s, &c);
  EXPECT_EQ(PathKeys(s), With(With(kRunPaths, kDataPaths), {"tls.ca", "tls.cert", "tls.key",
                                                            "tls.deny_list", "output.ready_file"}));
  EXPECT_EQ(SecretKeys(s), (std::set<std::string>{"monitor.token", "dp.noise_seed"}));
  ExpectResolvedAgainstTheFile(s);
}

TEST(ConfigPathKeysTest, TheClientsFilesAndDirectoriesArePathKeys) {
  ClientConfig c;
  ConfigSchema s("tributary-client");
  BindClientConfig(s, &c);
  EXPECT_EQ(PathKeys(s),
            With(kDataPaths, {"tls.ca", "tls.cert", "tls.key", "state_dir", "run.model"}));
  EXPECT_EQ(SecretKeys(s), std::set<std::string>{});
  ExpectResolvedAgainstTheFile(s);
}

TEST(ConfigPathKeysTest, TheSimulatorsFilesAndDirectoriesArePathKeys) {
  SimConfig c;
  ConfigSchema s("tributary-sim");
  BindSimConfig(s, &c);
  std::set<std::string> expected = With(With(kRunPaths, kDataPaths), {"sim.report_dir"});
  for (const ConfigSchema::Key* k : s.keys())
    if (!k->refusal().empty()) expected.erase(k->name());  // keys the simulator refuses
  EXPECT_EQ(PathKeys(s), expected);
  EXPECT_EQ(SecretKeys(s), std::set<std::string>{"dp.noise_seed"});
  ExpectResolvedAgainstTheFile(s);
}

TEST(ConfigPathKeysTest, ABuiltInModelAndAnOffHistoryAreNotPaths) {
  CoordinatorConfig c;
  ConfigSchema s("tributary-coordinator");
  BindCoordinatorConfig(s, &c);
  Result<Config> file = Config::Parse("[run]\nmodel = \"cnn\"\n[output]\nhistory = \"none\"\n");
  ASSERT_TRUE(file.ok());
  // Parse has no file: its base directory is the working directory, so nothing changes either way.
  ASSERT_TRUE(s.Load(*file).ok());
  EXPECT_FALSE(s.Find("run.model")->IsPathValue("cnn"));
  EXPECT_TRUE(s.Find("run.model")->IsPathValue("my.toml"));
  EXPECT_FALSE(s.Find("output.history")->IsPathValue("none"));
  EXPECT_FALSE(s.Find("output.history")->IsPathValue(""));
  EXPECT_TRUE(s.Find("output.history")->IsPathValue("h.db"));
}

}  // namespace
}  // namespace tributary
