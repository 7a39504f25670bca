#include "core/config.h"

#include <gtest/gtest.h>

namespace tributary {
namespace {

TEST(ConfigTest, TypedGettersWithDefaults) {
  auto c = Config::Parse(
      "rounds = 5\n[train]\nlr = 0.1\nmodel = \"mlp\"\nverbose = true\nepochs = 2\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c->GetInt("rounds", 1), 5);
  EXPECT_EQ(*c->GetInt("missing", 7), 7);
  EXPECT_DOUBLE_EQ(*c->GetDouble("train.lr", 0), 0.1);
  EXPECT_DOUBLE_EQ(*c->GetDouble("train.epochs", 0), 2.0);
  EXPECT_EQ(*c->GetString("train.model", ""), "mlp");
  EXPECT_TRUE(*c->GetBool("train.verbose", false));
}

TEST(ConfigTest, WrongTypeNamesTheKey) {
  auto c = Config::Parse("[train]\nlr = \"fast\"\n", "job.toml");
  ASSERT_TRUE(c.ok());
  auto lr = c->GetDouble("train.lr", 0);
  ASSERT_FALSE(lr.ok());
  EXPECT_NE(lr.status().message().find("train.lr"), std::string::npos);
  EXPECT_NE(lr.status().message().find("job.toml"), std::string::npos);
}

TEST(ConfigTest, UnknownKeysAndSyntaxErrors) {
  auto c = Config::Parse("rounds = 1\n[train]\nlr = 0.1\nlrr = 2\n", "x.toml");
  ASSERT_TRUE(c.ok());
  Status s = c->CheckKnownKeys({"rounds", "train.lr"});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("train.lrr"), std::string::npos);
  EXPECT_TRUE(c->CheckKnownKeys({"rounds", "train"}).ok());
  auto bad = Config::Parse("rounds = = 1\n", "bad.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.toml:1"), std::string::npos);
}

}  // namespace
}  // namespace tributary
