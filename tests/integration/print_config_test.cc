// `--print-config` of the real binaries: every key the program's schema has, with its default, as
// TOML that the same schema loads back unchanged; and a bad key on the command line is refused by
// name with exit status 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "client/client_config.h"
#include "coordinator/coordinator_config.h"
#include "sim/sim_config.h"
#include "tests/integration/process.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

// Runs `binary args...` and returns its exit code and output.
std::pair<int, std::string> RunBinary(std::vector<std::string> argv) {
  const std::string log = (std::filesystem::temp_directory_path() /
                           ("trib_print_config_" + std::to_string(::getpid()) + ".log"))
                              .string();
  testing::Process p(std::move(argv), log);
  std::optional<int> code = p.Wait(30s);
  std::string out = p.Log();
  std::filesystem::remove(log);
  return {code.value_or(-1), out};
}

template <class Settings, class Bind>
void ExpectPrintedConfigLoadsBack(const char* binary, const char* program, Bind bind) {
  auto [code, out] = RunBinary({binary, "--print-config"});
  ASSERT_EQ(code, 0) << out;
  Settings printed, defaults;
  ConfigSchema schema(program), reference(program);
  bind(schema, &printed);
  bind(reference, &defaults);
  Result<Config> doc = Config::Parse(out, "--print-config");
  ASSERT_TRUE(doc.ok()) << doc.status() << "\n" << out;
  ASSERT_TRUE(schema.Load(*doc).ok()) << schema.Load(*doc);
  size_t keys = 0;
  for (const ConfigSchema::Key* k : reference.keys()) {
    if (!k->refusal().empty()) continue;
    ++keys;
    EXPECT_NE(out.find(k->name() + " = " + k->default_text()), std::string::npos) << k->name();
    EXPECT_EQ(schema.Find(k->name())->value_text(), k->default_text()) << k->name();
  }
  EXPECT_GT(keys, 20u);
}

TEST(PrintConfigTest, EveryBinaryPrintsItsSchemaAsTomlThatLoadsBack) {
  ExpectPrintedConfigLoadsBack<CoordinatorConfig>(
      TRIBUTARY_COORDINATOR_BIN, "tributary-coordinator",
      [](ConfigSchema& s, CoordinatorConfig* c) { BindCoordinatorConfig(s, c); });
  ExpectPrintedConfigLoadsBack<ClientConfig>(
      TRIBUTARY_CLIENT_BIN, "tributary-client",
      [](ConfigSchema& s, ClientConfig* c) { BindClientConfig(s, c); });
  ExpectPrintedConfigLoadsBack<SimConfig>(
      TRIBUTARY_SIM_BIN, "tributary-sim",
      [](ConfigSchema& s, SimConfig* c) { BindSimConfig(s, c); });
  // tributary-train's schema lives in its main; its printout is TOML with the shared names.
  auto [code, out] = RunBinary({TRIBUTARY_TRAIN_BIN, "--print-config"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(Config::Parse(out, "--print-config").ok()) << out;
  for (const char* line : {"run.model = \"mlp\"", "fit.epochs = 10", "fit.momentum = 0.9",
                           "data.dir = \"\"", "output.final_model = \"\""})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  EXPECT_EQ(out.find("fit.proximal_mu"), std::string::npos) << "refused in centralized training";
}

TEST(PrintConfigTest, ABadKeyOnTheCommandLineIsRefusedByName) {
  auto [code, out] = RunBinary({TRIBUTARY_SIM_BIN, "--set", "per_round=5"});
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("key 'per_round' was renamed 'run.clients_per_round'"), std::string::npos)
      << out;
  auto [code2, out2] = RunBinary({TRIBUTARY_COORDINATOR_BIN, "--rounds", "ten"});
  EXPECT_EQ(code2, 2);
  EXPECT_NE(out2.find("--rounds: key 'run.rounds' must be an integer, not 'ten'"),
            std::string::npos)
      << out2;
}

// Finding 6 of the hostile test: negative flags were ignored (-1 meant "not given"), a negative
// fit.lr was refused without naming the key, and --resume without a checkpoint started a new run.
// Each is now an error naming the key (or the directory), with exit status 2.
TEST(PrintConfigTest, NegativeValuesAndAResumeWithoutACheckpointAreRefusedByName) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("trib_no_ckpt_" + std::to_string(::getpid())))
          .string();
  const std::vector<std::string> tls = {"--ca", "ca.crt", "--cert", "s.crt", "--key", "s.key"};
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--rounds=-1"}, "key 'run.rounds' = -1 must be >= 1"},
      {{"--clients-per-round=-4"}, "key 'run.clients_per_round' = -4 must be >= 1"},
      {{"--set", "fit.lr=-1"}, "key 'fit.lr' = -1 must be > 0"},
      {{"--set", "run.max_round_attempts=-2"}, "key 'run.max_round_attempts' = -2 must be >= 0"},
      {{"--set", "output.checkpoint_dir=" + dir, "--resume"},
       "resuming: there is no checkpoint in " + dir + " (output.checkpoint_dir)"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {TRIBUTARY_COORDINATOR_BIN};
    argv.insert(argv.end(), tls.begin(), tls.end());
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = RunBinary(argv);
    EXPECT_EQ(code, 2) << args[0] << ": " << out;
    EXPECT_NE(out.find(message), std::string::npos) << args[0] << ": " << out;
  }
}

// A TLS file the coordinator cannot read is named with its key (it said only "no such file: PATH").
TEST(PrintConfigTest, AnUnreadableTlsFileIsNamedWithItsKey) {
  const std::string missing = (std::filesystem::temp_directory_path() /
                               ("trib_no_such_" + std::to_string(::getpid()) + ".crt"))
                                  .string();
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string present = missing + ".present";  // readable (its contents are not reached)
  std::ofstream(present) << "not a certificate\n";
  const std::string outputs = dir + "/trib_tls_" + std::to_string(::getpid());  // removed after
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--ca", missing, "--cert", "s.crt", "--key", "s.key"},
       "key 'tls.ca': cannot read " + missing + ": no such file"},
      {{"--ca", present, "--cert", dir, "--key", "s.key"},
       "key 'tls.cert': cannot read " + dir + ": a directory, not a file"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> argv = {TRIBUTARY_COORDINATOR_BIN, "--set", "output.history=none",
                                     "--set", "output.checkpoint_dir=" + outputs};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = RunBinary(argv);
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find(message), std::string::npos) << out;
  }
  std::filesystem::remove(present);
  std::filesystem::remove_all(outputs);
}

}  // namespace
}  // namespace tributary
