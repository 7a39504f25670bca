// tributary-client's settings: TOML plus flag overrides, and errors that name the key.
#include "client/tools/client_config.h"

#include <gtest/gtest.h>

#include <set>

#include "client/tools/client_data.h"
#include "core/file_util.h"
#include "tests/client/temp_dir.h"
#include "train/data/idx.h"

namespace tributary {
namespace {

using tributary::testing::TempDir;

constexpr const char* kGood = R"(
coordinator = "coord.example.org:7070"
state_dir = "/tmp/state"
model = "cnn"
heartbeat_ms = 250
[tls]
ca = "ca.crt"
cert = "edge.crt"
key = "edge.key"
[data]
partition = "dirichlet:0.5"
num_clients = 10
client_index = 3
partition_seed = 9
[backoff]
initial_ms = 100
max_ms = 2000
jitter = 0.25
max_attempts = 7
)";

Result<ClientCliOptions> Parse(const std::string& text, std::set<std::string> flags = {},
                               ClientCliOptions start = {}) {
  TRIB_ASSIGN_OR_RETURN(Config cfg, Config::Parse(text, "client.toml"));
  ClientCliOptions o = start;
  TRIB_RETURN_IF_ERROR(ApplyClientConfig(
      cfg, [&](const char* f) { return flags.count(f) > 0; }, &o));
  return o;
}

TEST(ClientConfigTest, ReadsEveryTableAndValidates) {
  auto o = Parse(kGood);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->coordinator, "coord.example.org:7070");
  EXPECT_EQ(o->model, "cnn");
  EXPECT_EQ(o->ca, "ca.crt");
  EXPECT_EQ(o->key, "edge.key");
  EXPECT_EQ(o->partition, "dirichlet:0.5");
  EXPECT_EQ(o->num_clients, 10);
  EXPECT_EQ(o->client_index, 3);
  EXPECT_EQ(o->partition_seed, 9);
  EXPECT_EQ(o->max_attempts, 7);
  EXPECT_DOUBLE_EQ(o->backoff_jitter, 0.25);
  ASSERT_TRUE(ValidateClientCliOptions(*o).ok()) << ValidateClientCliOptions(*o);

  const ClientOptions c = ToClientOptions(*o, 1234);
  EXPECT_EQ(c.num_examples, 1234u);
  EXPECT_EQ(c.backoff.initial_delay.count(), 100);
  EXPECT_EQ(c.backoff.max_delay.count(), 2000);
  EXPECT_EQ(c.backoff.max_attempts, 7);
  EXPECT_EQ(c.heartbeat_interval.count(), 250);
  EXPECT_EQ(c.state_dir, "/tmp/state");
  // Clients differing only in their index jitter differently.
  ClientCliOptions other = *o;
  other.client_index = 4;
  EXPECT_NE(ToClientOptions(other, 0).backoff.seed, c.backoff.seed);
}

TEST(ClientConfigTest, FlagsWin) {
  ClientCliOptions start;
  start.client_index = 8;
  start.model = "lenet";
  auto o = Parse(kGood, {"--client-index", "--model"}, start);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->client_index, 8);
  EXPECT_EQ(o->model, "lenet");
  EXPECT_EQ(o->num_clients, 10);  // from the file
}

TEST(ClientConfigTest, UnknownKeysAndWrongTypesAreNamed) {
  auto o = Parse("coordinator = \"a:1\"\n[data]\nclient_idx = 3\n");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("data.client_idx"), std::string::npos) << o.status();
  o = Parse("[data]\nnum_clients = \"ten\"\n");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("data.num_clients"), std::string::npos) << o.status();
}

TEST(ClientConfigTest, ValidationNamesKeyAndFlag) {
  auto base = [] { return *Parse(kGood); };

  ClientCliOptions o = base();
  o.client_index = 10;
  EXPECT_NE(ValidateClientCliOptions(o).message().find(
                "data.client_index (--client-index) = 10 must be in [0, data.num_clients = 10)"),
            std::string::npos)
      << ValidateClientCliOptions(o);
  o = base();
  o.coordinator.clear();
  EXPECT_NE(ValidateClientCliOptions(o).message().find("coordinator (--coordinator) is required"),
            std::string::npos);
  o = base();
  o.cert.clear();
  EXPECT_NE(ValidateClientCliOptions(o).message().find("tls.cert (--cert)"), std::string::npos);
  o = base();
  o.train_images = "x.idx";
  EXPECT_NE(ValidateClientCliOptions(o).message().find("data.train_labels (--train-labels)"),
            std::string::npos);
  o = base();
  o.backoff_max_ms = 50;
  EXPECT_NE(ValidateClientCliOptions(o).message().find("backoff.max_ms"), std::string::npos);
  o = base();
  o.backoff_jitter = 2;
  EXPECT_NE(ValidateClientCliOptions(o).message().find("backoff.jitter"), std::string::npos);
  o = base();
  o.coordinator = "no-port";
  EXPECT_NE(ValidateClientCliOptions(o).message().find("coordinator"), std::string::npos);
}

TEST(ClientConfigTest, MissingTlsFilesNameTheKey) {
  TempDir tmp;
  ASSERT_TRUE(WriteFileAtomic(tmp.file("ca.crt"), std::vector<uint8_t>{'x'}).ok());
  ClientCliOptions o;
  o.ca = tmp.file("ca.crt");
  o.cert = o.ca;
  o.key = tmp.file("missing.key");
  const Status s = CheckClientFiles(o);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("tls.key (--key): cannot read " + o.key), std::string::npos) << s;
  o.key = o.ca;
  EXPECT_TRUE(CheckClientFiles(o).ok());
}

// A tiny IDX data set: n 4x4 images whose pixels equal the label * 20, labels i % 10.
void WriteIdx(const TempDir& tmp, int n) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < n; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 10));
    for (int p = 0; p < 16; ++p) images.push_back(static_cast<uint8_t>((i % 10) * 20));
  }
  const std::vector<uint32_t> idims = {static_cast<uint32_t>(n), 4, 4};
  const std::vector<uint32_t> ldims = {static_cast<uint32_t>(n)};
  ASSERT_TRUE(WriteFileAtomic(tmp.file("img.idx"), EncodeIdx(idims, images)).ok());
  ASSERT_TRUE(WriteFileAtomic(tmp.file("lbl.idx"), EncodeIdx(ldims, labels)).ok());
}

TEST(ClientDataTest, IdxSharesAreDisjointAndCoverTheSet) {
  TempDir tmp;
  WriteIdx(tmp, 100);
  ClientCliOptions o;
  o.train_images = o.test_images = tmp.file("img.idx");
  o.train_labels = o.test_labels = tmp.file("lbl.idx");
  o.num_clients = 4;
  o.partition = "iid";
  int64_t train_total = 0, eval_total = 0;
  for (int c = 0; c < 4; ++c) {
    o.client_index = c;
    auto d = LoadClientData(o);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->train->size(), 25);
    EXPECT_EQ(d->train->height, 4);
    ASSERT_TRUE(d->eval);
    train_total += d->train->size();
    eval_total += d->eval->size();
    // Pixels were scaled to [0, 1] and still match their labels.
    for (int64_t i = 0; i < d->train->size(); ++i)
      EXPECT_FLOAT_EQ(d->train->image(i)[0], d->train->labels[i] * 20 / 255.0f);
  }
  EXPECT_EQ(train_total, 100);
  EXPECT_EQ(eval_total, 100);

  o.client_index = 0;
  o.eval_examples = 5;
  o.test_images.clear();
  o.test_labels.clear();
  auto d = LoadClientData(o);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->eval);
}

TEST(ClientDataTest, BadFilesAndPartitionsAreNamed) {
  TempDir tmp;
  WriteIdx(tmp, 20);
  ClientCliOptions o;
  o.train_images = tmp.file("img.idx");
  o.train_labels = tmp.file("missing.idx");
  auto d = LoadClientData(o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("missing.idx"), std::string::npos) << d.status();

  o.train_labels = tmp.file("lbl.idx");
  o.partition = "zipf:2";
  o.num_clients = 2;
  d = LoadClientData(o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("data.partition 'zipf:2'"), std::string::npos) << d.status();
}

}  // namespace
}  // namespace tributary
