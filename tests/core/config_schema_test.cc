// ConfigSchema: keys bound to fields, loaded from TOML and from flag text, with errors that name
// the source and the key; the TOML it writes reads back to the same values.
#include "core/config_schema.h"

#include <gtest/gtest.h>

#include "core/fit_config.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

struct Settings {
  std::string name = "mlp";
  int64_t rounds = 10;
  int epochs = 1;
  uint64_t seed = 7;
  double fraction = 0.25;
  float lr = 0.05f;
  bool verbose = false;
  std::chrono::milliseconds timeout{120'000};
};

struct Fixture {
  Fixture() {
    schema.Bind("run.model", &s.name, "the model").Flag("--model");
    schema.Bind("run.rounds", &s.rounds, "rounds to run").Flag("--rounds");
    schema.Bind("fit.epochs", &s.epochs, "local epochs");
    schema.Bind("run.seed", &s.seed, "seed");
    schema.Bind("run.fraction", &s.fraction, "fraction");
    schema.Bind("fit.lr", &s.lr, "learning rate");
    schema.Bind("verbose", &s.verbose, "talk more");
    schema.Bind("run.round_timeout_s", &s.timeout, "deadline");
    schema.Rename("per_round", "run.clients_per_round");
  }
  Status Load(std::string_view toml) {
    Result<Config> c = Config::Parse(toml, "t.toml");
    if (!c.ok()) return c.status();
    return schema.Load(*c);
  }
  Settings s;
  ConfigSchema schema{"tributary-test"};
};

TEST(ConfigSchemaTest, LoadsEveryTypeFromTablesAndDottedKeys) {
  Fixture f;
  const Status s = f.Load(
      "verbose = true\nfit.epochs = 4\nfit.lr = 0.125\n[run]\nmodel = \"cnn\"\nrounds = 3\n"
      "seed = 9\nfraction = 1\nround_timeout_s = 2.5\n");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(f.s.name, "cnn");
  EXPECT_EQ(f.s.rounds, 3);
  EXPECT_EQ(f.s.epochs, 4);
  EXPECT_EQ(f.s.seed, 9u);
  EXPECT_EQ(f.s.fraction, 1.0);  // an integer is a number
  EXPECT_EQ(f.s.lr, 0.125f);
  EXPECT_TRUE(f.s.verbose);
  EXPECT_EQ(f.s.timeout, 2500ms);
}

TEST(ConfigSchemaTest, ErrorsNameTheSourceAndTheKey) {
  struct Case {
    const char* toml;
    const char* message;
  };
  const Case cases[] = {
      {"[run]\nrounds = \"ten\"\n", "t.toml: key 'run.rounds' must be an integer"},
      {"[run]\nmodle = \"cnn\"\n", "t.toml: unknown key 'run.modle'"},
      {"per_round = 5\n", "t.toml: key 'per_round' was renamed 'run.clients_per_round'"},
      {"[run]\nseed = -1\n", "t.toml: key 'run.seed' = -1 is out of range [0, "},
      {"[fit]\nepochs = 3000000000\n", "t.toml: key 'fit.epochs' = 3000000000 is out of range"},
      {"[fit]\nlr = nan\n", "t.toml: key 'fit.lr' must be a number"},
      {"verbose = 1\n", "t.toml: key 'verbose' must be true or false"},
      {"[run]\nround_timeout_s = -3\n",
       "key 'run.round_timeout_s' = -3 must be a number of seconds"},
      {"[run]\nmodel = 5\n", "t.toml: key 'run.model' must be a string"},
  };
  for (const Case& c : cases) {
    Fixture f;
    const Status s = f.Load(c.toml);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.toml;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s << "\nwanted: " << c.message;
  }
}

TEST(ConfigSchemaTest, ARefusedKeyIsAnErrorSayingWhy) {
  Fixture f;
  f.schema.Refuse("run.fraction", "every virtual client is selected from the whole population");
  const Status s = f.Load("[run]\nfraction = 0.5\n");
  EXPECT_NE(s.message().find("t.toml: key 'run.fraction' is not used by tributary-test: every "
                             "virtual client is selected from the whole population"),
            std::string::npos)
      << s;
  EXPECT_FALSE(f.schema.Assign("run.fraction=0.5").ok());
  EXPECT_EQ(f.schema.DefaultsToml().find("run.fraction"), std::string::npos)
      << "a refused key is not listed";
}

TEST(ConfigSchemaTest, FlagTextIsReadAsTheKeysType) {
  Fixture f;
  ASSERT_TRUE(f.schema.Set("run.rounds", "12", "--rounds").ok());
  ASSERT_TRUE(f.schema.Set("run.model", "topk(0.01)+q8", "--model").ok());  // taken as it is
  ASSERT_TRUE(f.schema.Assign("fit.lr=0.5").ok());
  ASSERT_TRUE(f.schema.Assign("run.model=\"lenet\"").ok());
  ASSERT_TRUE(f.schema.Assign("run.round_timeout_s = 0.25").ok());
  EXPECT_EQ(f.s.rounds, 12);
  EXPECT_EQ(f.s.lr, 0.5f);
  EXPECT_EQ(f.s.name, "lenet");
  EXPECT_EQ(f.s.timeout, 250ms);
  Status s = f.schema.Set("run.rounds", "12x", "--rounds");
  EXPECT_NE(s.message().find("--rounds: key 'run.rounds' must be an integer, not '12x'"),
            std::string::npos)
      << s;
  s = f.schema.Assign("verbose=yes");
  EXPECT_NE(s.message().find("--set: key 'verbose' must be true or false, not 'yes'"),
            std::string::npos)
      << s;
  EXPECT_NE(f.schema.Assign("rounds").message().find("is not key=value"), std::string::npos);
  EXPECT_NE(f.schema.Assign("run.roundz=3").message().find("unknown key 'run.roundz'"),
            std::string::npos);
}

TEST(ConfigSchemaTest, WrittenTomlReadsBackToTheSameValues) {
  Fixture a;
  ASSERT_TRUE(a.Load("verbose = true\n[run]\nmodel = \"a \\\"quoted\\\" \\\\ name\"\nrounds = -4\n"
                     "seed = 123456789012\nfraction = 0.1\nround_timeout_s = 0.001\n[fit]\n"
                     "epochs = 2\nlr = 0.3\n")
                  .ok());
  EXPECT_FALSE(a.schema.IsDefault("run.rounds"));
  EXPECT_TRUE(a.schema.IsDefault("fit.lr") == false);
  Fixture b;
  const std::string values = a.schema.ValuesToml();
  ASSERT_TRUE(b.Load(values).ok()) << values;
  EXPECT_EQ(b.s.name, a.s.name);
  EXPECT_EQ(b.s.rounds, -4);
  EXPECT_EQ(b.s.seed, 123456789012u);
  EXPECT_EQ(b.s.fraction, 0.1);
  EXPECT_EQ(b.s.lr, 0.3f);
  EXPECT_EQ(b.s.epochs, 2);
  EXPECT_TRUE(b.s.verbose);
  EXPECT_EQ(b.s.timeout, 1ms);
  // The defaults document reads back to the defaults, and says what each key is for.
  Fixture c;
  const std::string defaults = c.schema.DefaultsToml();
  EXPECT_NE(defaults.find("run.rounds = 10  # rounds to run (--rounds)"), std::string::npos)
      << defaults;
  EXPECT_NE(defaults.find("fit.lr = 0.05  # learning rate"), std::string::npos) << defaults;
  EXPECT_NE(defaults.find("run.round_timeout_s = 120.0  # deadline"), std::string::npos);
  ASSERT_TRUE(b.Load(defaults).ok());
  EXPECT_EQ(b.s.rounds, 10);
  EXPECT_EQ(b.s.lr, 0.05f);
  for (const ConfigSchema::Key* k : b.schema.keys()) EXPECT_TRUE(b.schema.IsDefault(k->name()));
}

TEST(FitConfigKeysTest, ValidationNamesTheKeyAndTheRange) {
  FitConfig fit;
  EXPECT_TRUE(ValidateFitConfig(fit).ok());
  ConfigSchema schema("tributary-test");
  BindFitConfig(schema, &fit);
  ASSERT_TRUE(schema.Assign("fit.momentum=1.0").ok());
  const Status s = ValidateFitConfig(fit);
  EXPECT_NE(s.message().find("key 'fit.momentum' = 1 must be in [0, 1)"), std::string::npos) << s;
  fit = FitConfig{};
  fit.batch_size = 0;
  EXPECT_NE(ValidateFitConfig(fit).message().find("fit.batch_size"), std::string::npos);
}

}  // namespace
}  // namespace tributary
