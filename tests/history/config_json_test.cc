// The configuration a run's record holds (ConfigJson): every key with its value, except that the
// keys the schema marks Secret() (dp.noise_seed, monitor.token) are "<redacted>" when set (not ""
// or 0); no key is hidden or shown for its name alone.
#include "history/config_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "coordinator/coordinator_config.h"

namespace tributary {
namespace {

TEST(ConfigJsonTest, TheCoordinatorsRecordedConfigHasNoNoiseSeedOrToken) {
  CoordinatorConfig c;
  ConfigSchema s("tributary-coordinator");
  BindCoordinatorConfig(s, &c);
  ASSERT_TRUE(s.Assign("dp.noise_seed=987654321").ok());
  ASSERT_TRUE(s.Assign("monitor.token=tok-5f2b9e").ok());
  ASSERT_TRUE(s.Assign("run.rounds=7").ok());
  const std::string text = ConfigJson(s);
  EXPECT_EQ(text.find("987654321"), std::string::npos) << text;
  EXPECT_EQ(text.find("tok-5f2b9e"), std::string::npos) << text;
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["dp.noise_seed"], "<redacted>");
  EXPECT_EQ(j["monitor.token"], "<redacted>");
  EXPECT_EQ(j["run.rounds"], 7);
  EXPECT_EQ(j["dp.noise_multiplier"], c.run.round.dp.noise_multiplier);

  // As tributary-coordinator records it: a schema bound to a copy of the loaded values.
  CoordinatorConfig recorded = c;
  ConfigSchema r("tributary-coordinator");
  BindCoordinatorConfig(r, &recorded);
  const std::string again = ConfigJson(r);
  EXPECT_EQ(again.find("987654321"), std::string::npos) << again;
  EXPECT_EQ(again.find("tok-5f2b9e"), std::string::npos) << again;
  EXPECT_EQ(nlohmann::json::parse(again)["dp.noise_seed"], "<redacted>");
}

TEST(ConfigJsonTest, DefaultsOfSecretKeysAreShownAndNamesDoNotMakeSecrets) {
  CoordinatorConfig c;
  ConfigSchema s("tributary-coordinator");
  BindCoordinatorConfig(s, &c);
  const nlohmann::json j = nlohmann::json::parse(ConfigJson(s));
  EXPECT_EQ(j["dp.noise_seed"], 0);  // 0: OS randomness, nothing to hide (unset)
  EXPECT_EQ(j["monitor.token"], "");

  // A key named like a secret but not marked one is recorded; one marked secret is not.
  std::string session_token = "visible", password_file = "pw.txt";
  int64_t pin = 1234;
  ConfigSchema t("test");
  t.Bind("net.session_token", &session_token, "not a secret here");
  t.Bind("auth.password", &password_file, "not a secret here");
  t.Bind("auth.pin", &pin, "a secret").Secret();
  pin = 4321;
  const nlohmann::json k = nlohmann::json::parse(ConfigJson(t));
  EXPECT_EQ(k["net.session_token"], "visible");
  EXPECT_EQ(k["auth.password"], "pw.txt");
  EXPECT_EQ(k["auth.pin"], "<redacted>");
}

}  // namespace
}  // namespace tributary
