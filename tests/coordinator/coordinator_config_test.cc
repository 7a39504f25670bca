// Coordinator config loading: the download codec key (run.download_codec).
#include "coordinator/coordinator_config.h"

#include <gtest/gtest.h>

#include "core/config.h"

namespace tributary {
namespace {

Status Load(const std::string& toml, CoordinatorConfig* out) {
  Result<Config> cfg = Config::Parse(toml, "coordinator.toml");
  if (!cfg.ok()) return cfg.status();
  return LoadCoordinatorConfig(*cfg, out);
}

TEST(CoordinatorConfigTest, DownloadCodecDefaultsToDenseAndAcceptsQ8) {
  CoordinatorConfig c;
  ASSERT_TRUE(Load("[run]\nrounds = 2\n", &c).ok());
  EXPECT_EQ(c.round.download_codec, "dense");
  CoordinatorConfig q;
  Status s = Load("[run]\ndownload_codec = \"q8\"\n", &q);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(q.round.download_codec, "q8");
}

TEST(CoordinatorConfigTest, UnknownDownloadCodecIsAnErrorNamingTheKey) {
  CoordinatorConfig c;
  Status s = Load("[run]\ndownload_codec = \"topk(0.1)\"\n", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("coordinator.toml: round config: download_codec: codec 'topk(0.1)' "
                             "cannot carry a global model"),
            std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace tributary
