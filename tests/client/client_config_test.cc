// tributary-client's settings: TOML plus flag overrides, and errors that name the key.
#include "client/client_config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <set>

#include "client/client_data.h"
#include "core/file_util.h"
#include "tests/client/temp_dir.h"
#include "tests/core/sanitizers.h"
#include "train/data/data_config.h"
#include "train/data/fashion_mnist.h"
#include "train/data/feature_noise.h"
#include "train/data/idx.h"
#include "train/data/partition.h"

namespace tributary {
namespace {

using tributary::testing::TempDir;

constexpr const char* kGood = R"(
state_dir = "/tmp/state"
[net]
coordinator = "coord.example.org:7070"
heartbeat_interval_s = 0.25
[run]
model = "cnn"
[tls]
ca = "ca.crt"
cert = "edge.crt"
key = "edge.key"
[data]
partition = "dirichlet:0.5"
num_clients = 10
client_index = 3
seed = 9
[backoff]
initial_s = 0.1
max_s = 2
jitter = 0.25
max_attempts = 7
)";

// Loads `text` over `start`, then applies `flags` ({flag, value}) as the command line does.
Result<ClientConfig> Parse(const std::string& text,
                           std::vector<std::pair<std::string, std::string>> flags = {},
                           ClientConfig start = {}) {
  ClientConfig o = start;
  ConfigSchema schema("tributary-client");
  BindClientConfig(schema, &o);
  TRIB_ASSIGN_OR_RETURN(Config cfg, Config::Parse(text, "client.toml"));
  TRIB_RETURN_IF_ERROR(schema.Load(cfg));
  for (const auto& [flag, value] : flags) {
    for (const ConfigSchema::Key* k : schema.keys())
      if (k->flag() == flag) TRIB_RETURN_IF_ERROR(schema.Set(k->name(), value, flag));
  }
  return o;
}

TEST(ClientConfigTest, ReadsEveryTableAndValidates) {
  auto o = Parse(kGood);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->coordinator, "coord.example.org:7070");
  EXPECT_EQ(o->model, "cnn");
  EXPECT_EQ(o->ca, "ca.crt");
  EXPECT_EQ(o->key, "edge.key");
  EXPECT_EQ(o->data.partition, "dirichlet:0.5");
  EXPECT_EQ(o->data.num_clients, 10);
  EXPECT_EQ(o->client_index, 3);
  EXPECT_EQ(o->data.seed, 9u);
  EXPECT_EQ(o->max_attempts, 7);
  EXPECT_DOUBLE_EQ(o->backoff_jitter, 0.25);
  ASSERT_TRUE(ValidateClientConfig(*o).ok()) << ValidateClientConfig(*o);

  const ClientOptions c = ToClientOptions(*o, 1234);
  EXPECT_EQ(c.num_examples, 1234u);
  EXPECT_EQ(c.backoff.initial_delay.count(), 100);
  EXPECT_EQ(c.backoff.max_delay.count(), 2000);
  EXPECT_EQ(c.backoff.max_attempts, 7);
  EXPECT_EQ(c.heartbeat_interval.count(), 250);
  EXPECT_EQ(c.state_dir, "/tmp/state");
  // No backoff.seed: each client draws its own (BackoffOptions::seed 0), whatever its index.
  EXPECT_EQ(c.backoff.seed, 0u);
  // A seed that was set is mixed with the index: clients differing only in their index jitter
  // differently, and deterministically.
  ClientConfig seeded = *o;
  seeded.backoff_seed = 9;
  ClientConfig other = seeded;
  other.client_index = 4;
  const uint64_t s3 = ToClientOptions(seeded, 0).backoff.seed;
  EXPECT_NE(s3, 0u);
  EXPECT_EQ(s3, ToClientOptions(seeded, 0).backoff.seed);
  EXPECT_NE(ToClientOptions(other, 0).backoff.seed, s3);
}

TEST(ClientConfigTest, FlagsWin) {
  auto o = Parse(kGood, {{"--client-index", "8"}, {"--model", "lenet"}});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client_index, 8);
  EXPECT_EQ(o->model, "lenet");
  EXPECT_EQ(o->data.num_clients, 10);  // from the file
  auto bad = Parse(kGood, {{"--client-index", "eight"}});
  EXPECT_NE(bad.status().message().find(
                "--client-index: key 'data.client_index' must be an integer, not 'eight'"),
            std::string::npos)
      << bad.status();
}

TEST(ClientConfigTest, UnknownRenamedKeysAndWrongTypesAreNamed) {
  auto o = Parse("[net]\ncoordinator = \"a:1\"\n[data]\nclient_idx = 3\n");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("data.client_idx"), std::string::npos) << o.status();
  o = Parse("[data]\nnum_clients = \"ten\"\n");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("data.num_clients"), std::string::npos) << o.status();
  o = Parse("heartbeat_ms = 250\n");
  EXPECT_NE(o.status().message().find("'heartbeat_ms' was renamed 'net.heartbeat_interval_s'"),
            std::string::npos)
      << o.status();
  o = Parse("[data]\npartition_seed = 3\n");
  EXPECT_NE(o.status().message().find("'data.partition_seed' was renamed 'data.seed'"),
            std::string::npos)
      << o.status();
}

TEST(ClientConfigTest, ValidationNamesKeyAndFlag) {
  auto base = [] { return *Parse(kGood); };

  ClientConfig o = base();
  o.client_index = 10;
  EXPECT_NE(ValidateClientConfig(o).message().find(
                "data.client_index (--client-index) = 10 must be in [0, data.num_clients = 10)"),
            std::string::npos)
      << ValidateClientConfig(o);
  o = base();
  o.coordinator.clear();
  EXPECT_NE(ValidateClientConfig(o).message().find("net.coordinator (--coordinator) is required"),
            std::string::npos);
  o = base();
  o.cert.clear();
  EXPECT_NE(ValidateClientConfig(o).message().find("tls.cert (--cert)"), std::string::npos);
  o = base();
  o.data.dataset = "files";
  o.data.train = "x.idx";
  EXPECT_NE(ValidateClientConfig(o).message().find("key 'data.train_labels' is required"),
            std::string::npos);
  o = base();
  o.backoff_max = std::chrono::milliseconds(50);
  EXPECT_NE(ValidateClientConfig(o).message().find("backoff.max_s"), std::string::npos);
  o = base();
  o.backoff_jitter = 2;
  EXPECT_NE(ValidateClientConfig(o).message().find("backoff.jitter"), std::string::npos);
  o = base();
  o.coordinator = "no-port";
  EXPECT_NE(ValidateClientConfig(o).message().find("coordinator"), std::string::npos);
  o = base();
  o.data.dataset = "mnist";
  EXPECT_NE(ValidateClientConfig(o).message().find("data.dataset"), std::string::npos);
}

TEST(ClientConfigTest, MissingTlsFilesNameTheKey) {
  TempDir tmp;
  ASSERT_TRUE(WriteFileAtomic(tmp.file("ca.crt"), std::vector<uint8_t>{'x'}).ok());
  ClientConfig o;
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
  ClientConfig o;
  o.data.dataset = "files";
  o.data.train = o.data.test = tmp.file("img.idx");
  o.data.train_labels = o.data.test_labels = tmp.file("lbl.idx");
  o.data.num_clients = 4;
  o.data.partition = "iid";
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
  o.data.test.clear();
  o.data.test_labels.clear();
  auto d = LoadClientData(o);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->eval);
}

TEST(ClientDataTest, BadFilesAndPartitionsAreNamed) {
  TempDir tmp;
  WriteIdx(tmp, 20);
  ClientConfig o;
  o.data.dataset = "files";
  o.data.train = tmp.file("img.idx");
  o.data.train_labels = tmp.file("missing.idx");
  auto d = LoadClientData(o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("missing.idx"), std::string::npos) << d.status();

  o.data.train_labels = tmp.file("lbl.idx");
  o.data.partition = "zipf:2";
  o.data.num_clients = 2;
  d = LoadClientData(o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("data.partition 'zipf:2'"), std::string::npos) << d.status();
}

// Three clients sharing 300 synthetic examples (60 for evaluation) under `partition`, seed 5.
ClientConfig SyntheticClients(const std::string& partition) {
  ClientConfig o;
  o.data.dataset = "synthetic";
  o.data.train_examples = 300;
  o.data.test_examples = 60;
  o.data.num_clients = 3;
  o.data.partition = partition;
  o.data.seed = 5;
  return o;
}

TEST(ClientDataTest, SyntheticSharesAreTheSimulatorsAndCoverTheSet) {
  // The same data keys give every client the same synthetic draw and the partition the
  // simulator's Population computes; the shares cover the training set exactly once.
  ClientConfig o = SyntheticClients("dirichlet:0.5");
  Result<DataSplits> all = LoadDataSplits(o.data, true, true);
  ASSERT_TRUE(all.ok()) << all.status();
  Result<Partition> parts = MakePartition("dirichlet:0.5", all.value().train->labels, 10, 3, 5);
  ASSERT_TRUE(parts.ok());
  int64_t total = 0;
  for (int c = 0; c < 3; ++c) {
    o.client_index = c;
    auto d = LoadClientData(o);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->train->size(), static_cast<int64_t>((*parts)[c].size()));
    for (int64_t i = 0; i < d->train->size(); ++i)
      ASSERT_EQ(d->train->labels[i], all.value().train->labels[(*parts)[c][i]]);
    EXPECT_EQ(d->train->height, 8);
    total += d->train->size();
  }
  EXPECT_EQ(total, 300);
}

// "+noise:SIGMA": a client's training images carry its feature noise (SIGMA * i / (N - 1)), the
// same draws the simulator's Population adds (keyed by seed, client and example); evaluation
// data stays clean.
TEST(ClientDataTest, FeatureNoiseReachesTheClientsTrainingImagesOnly) {
  ClientConfig o = SyntheticClients("dirichlet:0.5+noise:0.2");
  Result<DataSplits> all = LoadDataSplits(o.data, true, true);
  ASSERT_TRUE(all.ok()) << all.status();
  Result<Partition> parts = MakePartition("dirichlet:0.5", all.value().train->labels, 10, 3, 5);
  ASSERT_TRUE(parts.ok());
  for (int c = 0; c < 3; ++c) {
    o.client_index = c;
    auto d = LoadClientData(o);
    ASSERT_TRUE(d.ok()) << d.status();
    Dataset expected = all.value().train->Subset((*parts)[c]);
    ASSERT_TRUE(AddFeatureNoise(expected, (*parts)[c], 0.1 * c, 5, c).ok());
    EXPECT_EQ(d->train->images, expected.images) << "client " << c;
    if (c > 0) {
      EXPECT_NE(d->train->images, all.value().train->Subset((*parts)[c]).images);
      EXPECT_NE(d->description.find("feature noise of standard deviation"), std::string::npos)
          << d->description;
    }
    o.data.partition = "dirichlet:0.5";
    auto clean = LoadClientData(o);
    o.data.partition = "dirichlet:0.5+noise:0.2";
    ASSERT_TRUE(clean.ok());
    ASSERT_TRUE(d->eval && clean->eval);
    EXPECT_EQ(d->eval->images, clean->eval->images) << "evaluation data gets no noise";
  }
}

TEST(ClientDataTest, AFashionMnistClientHoldsItsShareOnlyAndTheSameOneAsAWholeLoad) {
  TRIB_SKIP_UNDER_TSAN_BECAUSE("one thread loading Fashion-MNIST twice (10 s there)");
  struct stat st {};
  if (::stat(kDefaultFashionMnistDir, &st) != 0)
    GTEST_SKIP() << kDefaultFashionMnistDir << " is absent; install dataset-fashion-mnist";
  ClientConfig o;
  o.data.num_clients = 10;
  o.data.partition = "dirichlet:0.5";
  o.data.seed = 3;
  o.client_index = 7;
  o.eval_examples = 300;
  auto d = LoadClientData(o);
  ASSERT_TRUE(d.ok()) << d.status();
  // What the client got is what a whole load cut by the same partition gives, float for float.
  Result<DataSplits> all = LoadDataSplits(o.data, true, true);
  ASSERT_TRUE(all.ok()) << all.status();
  Result<Partition> parts = MakePartition("dirichlet:0.5", all->train->labels, 10, 10, 3);
  ASSERT_TRUE(parts.ok());
  const Dataset want = all->train->Subset((*parts)[7]);
  EXPECT_EQ(d->train->labels, want.labels);
  EXPECT_EQ(d->train->images, want.images);
  // Its share, not the set: about a tenth of the 60,000 examples (a Dirichlet share varies).
  EXPECT_LT(d->train->size(), 30000);
  EXPECT_EQ(d->train->images.capacity(), d->train->images.size());
  ASSERT_TRUE(d->eval);
  EXPECT_EQ(d->eval->size(), 300);
}

}  // namespace
}  // namespace tributary
