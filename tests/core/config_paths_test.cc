// Path keys and secret keys of a ConfigSchema: a relative path in a config file is relative to the
// file's directory, wherever the program runs; one on the command line (a flag, --set) is relative
// to the working directory; absolute paths and "" stay as they are; ValuesToml() writes paths that
// mean the same from any directory; a secret's value is hidden in what records show.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/config_cli.h"
#include "core/config_schema.h"

namespace tributary {
namespace {

namespace fs = std::filesystem;

bool EndsInToml(std::string_view v) { return v.ends_with(".toml") || v.find('/') != v.npos; }

struct Paths {
  std::string ca, data, absolute, empty, model = "mlp", file_model, name, history;
};

void Bind(ConfigSchema& s, Paths* p) {
  s.Bind("tls.ca", &p->ca, "a file").Flag("--ca").Path();
  s.Bind("data.train", &p->data, "a file").Path();
  s.Bind("data.abs", &p->absolute, "a file").Path();
  s.Bind("data.empty", &p->empty, "a file").Path();
  s.Bind("run.model", &p->model, "a model or a file").Path(EndsInToml);
  s.Bind("run.file_model", &p->file_model, "a model or a file").Path(EndsInToml);
  s.Bind("run.name", &p->name, "not a path");
  s.Bind("output.history", &p->history, "a file or none").Path([](std::string_view v) {
    return v != "none";
  });
}

// A fresh directory (absolute), removed at the end; the test runs with another working directory
// and goes back to the first one at the end.
class ConfigPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trib_config_paths.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = fs::canonical(tmpl);  // as getcwd() names it
    fs::create_directories(root_ / "conf");
    fs::create_directories(root_ / "elsewhere");
    cwd_ = fs::current_path();
    std::ofstream(root_ / "conf" / "run.toml")
        << "[tls]\nca = \"pki/ca.crt\"\n"
        << "[data]\ntrain = \"../data/train.npz\"\nabs = \"/srv/data/test.npz\"\nempty = \"\"\n"
        << "[run]\nmodel = \"mlp\"\nfile_model = \"models/m.toml\"\nname = \"a/b\"\n"
        << "[output]\nhistory = \"none\"\n";
  }
  void TearDown() override {
    fs::current_path(cwd_);
    fs::remove_all(root_);
  }
  fs::path root_, cwd_;
};

TEST_F(ConfigPathsTest, RelativePathsInAFileAreRelativeToTheFilesDirectoryFromAnyCwd) {
  fs::current_path(root_ / "elsewhere");  // not the file's directory
  Paths p;
  ConfigSchema s("test");
  Bind(s, &p);
  Result<Config> file = Config::LoadFile((root_ / "conf" / "run.toml").string());
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->base_dir(), (root_ / "conf").string());
  ASSERT_TRUE(s.Load(*file).ok());
  EXPECT_EQ(p.ca, (root_ / "conf" / "pki" / "ca.crt").string());
  EXPECT_EQ(p.data, (root_ / "data" / "train.npz").string());  // "..": lexically normalized
  EXPECT_EQ(p.absolute, "/srv/data/test.npz");                 // absolute: unchanged
  EXPECT_EQ(p.empty, "");                                      // "": unset, unchanged
  EXPECT_EQ(p.model, "mlp");                                   // a built-in name, not a path
  EXPECT_EQ(p.file_model, (root_ / "conf" / "models" / "m.toml").string());
  EXPECT_EQ(p.name, "a/b");      // not a path key
  EXPECT_EQ(p.history, "none");  // the predicate says "none" is not a path

  // The same file named relative to the working directory: the paths are relative to it too, and
  // name the same files.
  fs::current_path(root_);
  Paths q;
  ConfigSchema t("test");
  Bind(t, &q);
  file = Config::LoadFile("conf/run.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(t.Load(*file).ok());
  EXPECT_EQ(q.ca, "conf/pki/ca.crt");
  EXPECT_EQ(q.data, "data/train.npz");
  EXPECT_EQ(q.file_model, "conf/models/m.toml");
  // A file in the working directory: its paths are as written.
  fs::current_path(root_ / "conf");
  Paths r;
  ConfigSchema u("test");
  Bind(u, &r);
  file = Config::LoadFile("run.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(u.Load(*file).ok());
  EXPECT_EQ(r.ca, "pki/ca.crt");
  EXPECT_EQ(r.data, "../data/train.npz");
}

TEST_F(ConfigPathsTest, PathsOnTheCommandLineAreRelativeToTheWorkingDirectory) {
  fs::current_path(root_ / "elsewhere");
  Paths p;
  ConfigSchema s("test");
  Bind(s, &p);
  CLI::App app{"test"};
  ConfigCommandLine cli(app, s);
  const std::string config = (root_ / "conf" / "run.toml").string();
  std::vector<std::string> args = {"--config",    config,  "--ca",
                                   "mine/ca.crt", "--set", "data.train=x/train.npz"};
  std::vector<char*> argv = {const_cast<char*>("test")};
  for (std::string& a : args) argv.push_back(a.data());
  ASSERT_NO_THROW(app.parse(static_cast<int>(argv.size()), argv.data()));
  ASSERT_TRUE(cli.Apply().ok());
  EXPECT_EQ(p.ca, "mine/ca.crt");    // the flag: as given, relative to the cwd
  EXPECT_EQ(p.data, "x/train.npz");  // --set: the same
  EXPECT_EQ(p.file_model, (root_ / "conf" / "models" / "m.toml").string());  // from the file
  ASSERT_TRUE(s.Assign("run.file_model=../m2.toml").ok());
  EXPECT_EQ(p.file_model, "../m2.toml");
}

TEST_F(ConfigPathsTest, WrittenValuesNameTheSameFilesWhereverTheFileIsRead) {
  fs::current_path(root_);
  Paths p;
  ConfigSchema s("test");
  Bind(s, &p);
  Result<Config> file = Config::LoadFile("conf/run.toml");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(s.Load(*file).ok());
  ASSERT_TRUE(s.Set("data.train", "cwd/train.npz", "--set").ok());
  // Written into another directory and read back from a third cwd: the same files.
  const fs::path copy = root_ / "elsewhere" / "copy.toml";
  std::ofstream(copy) << s.ValuesToml();
  fs::current_path("/");
  Paths q;
  ConfigSchema t("test");
  Bind(t, &q);
  file = Config::LoadFile(copy.string());
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(t.Load(*file).ok()) << s.ValuesToml();
  EXPECT_EQ(q.ca, (root_ / "conf" / "pki" / "ca.crt").string());
  EXPECT_EQ(q.data, (root_ / "cwd" / "train.npz").string());
  EXPECT_EQ(q.absolute, "/srv/data/test.npz");
  EXPECT_EQ(q.empty, "");
  EXPECT_EQ(q.model, "mlp");
  EXPECT_EQ(q.history, "none");
  EXPECT_EQ(q.name, "a/b");
}

TEST(ConfigPathsResolveTest, JoinsRelativePathsOnly) {
  EXPECT_EQ(ResolveConfigPath("a/b", "c.txt"), "a/b/c.txt");
  EXPECT_EQ(ResolveConfigPath("a/b", "../../c.txt"), "c.txt");
  EXPECT_EQ(ResolveConfigPath("a/b", "../../../c.txt"), "../c.txt");
  EXPECT_EQ(ResolveConfigPath("/etc/trib", "./pki/ca.crt"), "/etc/trib/pki/ca.crt");
  EXPECT_EQ(ResolveConfigPath("a/b", "/abs/c.txt"), "/abs/c.txt");
  EXPECT_EQ(ResolveConfigPath("", "c.txt"), "c.txt");
  EXPECT_EQ(ResolveConfigPath("a/b", ""), "");
}

TEST(ConfigSecretsTest, ASecretKeysValueIsRedactedInRecordsUnlessItIsUnset) {
  uint64_t seed = 0;
  std::string token, name = "mlp";
  ConfigSchema s("test");
  s.Bind("dp.noise_seed", &seed, "seed").Secret();
  s.Bind("monitor.token", &token, "token").Secret();
  s.Bind("run.model", &name, "model");
  const ConfigSchema::Key* k_seed = s.Find("dp.noise_seed");
  const ConfigSchema::Key* k_token = s.Find("monitor.token");
  EXPECT_TRUE(k_seed->secret());
  EXPECT_FALSE(s.Find("run.model")->secret());
  // The defaults (0: OS randomness; "": no token) are no secret.
  EXPECT_EQ(k_seed->recorded_text(), "0");
  EXPECT_EQ(k_token->recorded_text(), "\"\"");
  seed = 424242;
  token = "s3cr3t";
  name = "cnn";
  EXPECT_EQ(k_seed->recorded_text(), "\"<redacted>\"");
  EXPECT_EQ(k_token->recorded_text(), "\"<redacted>\"");
  EXPECT_EQ(s.Find("run.model")->recorded_text(), "\"cnn\"");
  // What hands the configuration on (deployment mode) still has the values.
  EXPECT_NE(s.ValuesToml().find("dp.noise_seed = 424242"), std::string::npos);
  EXPECT_NE(s.ValuesToml().find("monitor.token = \"s3cr3t\""), std::string::npos);

  // A schema bound to a copy of loaded values, as the programs record them: the values are its
  // defaults, and still hidden.
  uint64_t copy_seed = seed;
  ConfigSchema recorded("test");
  recorded.Bind("dp.noise_seed", &copy_seed, "seed").Secret();
  EXPECT_EQ(recorded.Find("dp.noise_seed")->recorded_text(), "\"<redacted>\"");
}

}  // namespace
}  // namespace tributary
