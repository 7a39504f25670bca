// tributary-coordinator's settings through its schema: the keys other programs share, validation
// written once (momentum is checked here as in the simulator), renamed keys, output defaults.
#include "coordinator/coordinator_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/config.h"

namespace tributary {
namespace {

// Loads `toml` over the defaults and validates, as the binary does.
Status Load(const std::string& toml, CoordinatorConfig* out) {
  ConfigSchema schema("tributary-coordinator");
  BindCoordinatorConfig(schema, out);
  Result<Config> cfg = Config::Parse(
      toml + "\n[tls]\nca = \"ca.crt\"\ncert = \"s.crt\"\nkey = \"s.key\"\n", "coordinator.toml");
  if (!cfg.ok()) return cfg.status();
  TRIB_RETURN_IF_ERROR(schema.Load(*cfg));
  out->ResolveOutputs();
  return out->Validate();
}

TEST(CoordinatorConfigTest, DownloadCodecDefaultsToDenseAndAcceptsAnyThatCarriesAModel) {
  CoordinatorConfig c;
  Status s = Load("[run]\nrounds = 2\n", &c);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(c.run.round.download_codec, "dense");
  EXPECT_EQ(c.run.round.rounds, 2);
  for (const char* codec : {"q8", "q8+zstd"}) {
    CoordinatorConfig q;
    s = Load(std::string("[run]\ndownload_codec = \"") + codec + "\"\n", &q);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(q.run.round.download_codec, codec);
  }
}

TEST(CoordinatorConfigTest, UnknownDownloadCodecIsAnErrorNamingTheKey) {
  CoordinatorConfig c;
  Status s = Load("[run]\ndownload_codec = \"topk(0.1)\"\n", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("key 'run.download_codec': codec 'topk(0.1)' cannot carry a global "
                             "model"),
            std::string::npos)
      << s.ToString();
}

TEST(CoordinatorConfigTest, FitSettingsAreValidatedAsInTheSimulator) {
  CoordinatorConfig c;
  Status s = Load("[fit]\nmomentum = 1.5\n", &c);
  EXPECT_NE(s.message().find("key 'fit.momentum' = 1.5 must be in [0, 1)"), std::string::npos) << s;
}

TEST(CoordinatorConfigTest, TheMinimumUploadRateIsKiBPerSecondAndZeroTurnsItOff) {
  CoordinatorConfig c;
  ASSERT_TRUE(Load("", &c).ok());
  EXPECT_EQ(c.min_upload_rate_kib_s, 1);
  CoordinatorConfig off;
  Status s = Load("[net]\nmin_upload_rate_kib_s = 0\n", &off);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(off.min_upload_rate_kib_s, 0);
  CoordinatorConfig bad;
  s = Load("[net]\nmin_upload_rate_kib_s = -4\n", &bad);
  EXPECT_NE(s.message().find("key 'net.min_upload_rate_kib_s' = -4 must be in [0, 1048576]"),
            std::string::npos)
      << s;
}

// The monitor binds an IP address: a host name is refused as such (it was told it "is reachable
// from other machines", even for localhost).
TEST(CoordinatorConfigTest, TheMonitorListensOnAnIpAddressNotAHostName) {
  for (const char* name : {"localhost:9090", "monitor.example:9090"}) {
    CoordinatorConfig c;
    const Status s = Load(fmt::format("[monitor]\nlisten = \"{}\"\ntoken = \"t\"\n", name), &c);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find("needs an IP address"), std::string::npos) << s;
  }
  for (const char* address : {"127.0.0.1:9090", "[::1]:9090", "0.0.0.0:9090"}) {
    CoordinatorConfig c;
    EXPECT_TRUE(Load(fmt::format("[monitor]\nlisten = \"{}\"\ntoken = \"t\"\n", address), &c).ok())
        << address;
  }
}

// The frame timeout (also the minimum rate's grace) is in seconds, fractions allowed, within
// [0.1 s, 1 h].
TEST(CoordinatorConfigTest, TheFrameTimeoutIsSecondsWithinATenthAndAnHour) {
  CoordinatorConfig c;
  ASSERT_TRUE(Load("", &c).ok());
  EXPECT_EQ(c.frame_timeout, std::chrono::milliseconds(30'000));
  CoordinatorConfig short_one;
  Status s = Load("[net]\nframe_timeout_s = 2.5\n", &short_one);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(short_one.frame_timeout, std::chrono::milliseconds(2'500));
  for (const char* value : {"0", "0.05", "3601"}) {
    CoordinatorConfig bad;
    s = Load(std::string("[net]\nframe_timeout_s = ") + value + "\n", &bad);
    EXPECT_NE(s.message().find("key 'net.frame_timeout_s' = "), std::string::npos) << value;
    EXPECT_NE(s.message().find("must be in [0.1, 3600]"), std::string::npos) << s;
  }
}

TEST(CoordinatorConfigTest, RenamedKeysNameTheirNewKey) {
  const std::pair<const char*, const char*> cases[] = {
      {"listen = \"0.0.0.0:1\"\n", "key 'listen' was renamed 'net.listen'"},
      {"[run]\nheartbeat_interval_s = 1\n",
       "key 'run.heartbeat_interval_s' was renamed 'net.heartbeat_interval_s'"},
      {"[eval]\ndata_dir = \"/d\"\n", "key 'eval.data_dir' was renamed 'data.dir'"},
      {"[eval]\nmax_examples = 10\n", "key 'eval.max_examples' was renamed 'data.test_examples'"},
  };
  for (const auto& [toml, message] : cases) {
    CoordinatorConfig c;
    Status s = Load(toml, &c);
    EXPECT_NE(s.message().find(message), std::string::npos) << s;
  }
}

TEST(CoordinatorConfigTest, OutputsDefaultIntoTheCheckpointDirectoryAndTlsIsRequired) {
  CoordinatorConfig c;
  ASSERT_TRUE(Load("[output]\ncheckpoint_dir = \"runs/x\"\n", &c).ok());
  EXPECT_EQ(c.run.event_log, "runs/x/events.jsonl");
  EXPECT_EQ(c.run.final_model, "runs/x/final.safetensors");
  CoordinatorConfig bare;
  bare.ResolveOutputs();
  EXPECT_NE(bare.Validate().message().find("'tls.ca', 'tls.cert' and 'tls.key' are required"),
            std::string::npos);
  CoordinatorConfig t;
  Status s = Load("[net]\nheartbeat_interval_s = 10\nclient_timeout_s = 5\n", &t);
  EXPECT_NE(s.message().find("net.client_timeout_s"), std::string::npos) << s;
}

TEST(CoordinatorConfigTest, MonitorLimitsAreReadAndCheckedByName) {
  CoordinatorConfig defaults;
  ASSERT_TRUE(Load("", &defaults).ok());
  EXPECT_EQ(defaults.monitor_limits.max_connections, 32);
  EXPECT_EQ(defaults.monitor_limits.max_connections_per_address, 8);
  EXPECT_EQ(defaults.monitor_limits.first_byte_timeout, std::chrono::milliseconds(2'000));
  EXPECT_EQ(defaults.monitor_limits.stream_stall_timeout, std::chrono::milliseconds(30'000));
  EXPECT_EQ(defaults.monitor_limits.stream_send_buffer_kb, 16);
  EXPECT_EQ(defaults.monitor_linger, std::chrono::milliseconds(0));  // exits at once
  CoordinatorConfig lingers;
  ASSERT_TRUE(Load("[monitor]\nlisten = \"127.0.0.1:0\"\nlinger_s = 15\n", &lingers).ok());
  EXPECT_EQ(lingers.monitor_linger, std::chrono::milliseconds(15'000));
  CoordinatorConfig c;
  Status s = Load(
      "[monitor]\nmax_connections_per_address = 2\nfirst_byte_timeout_s = 0.5\n"
      "stream_stall_timeout_s = 3\nstream_send_buffer_kb = 4\n",
      &c);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(c.monitor_limits.max_connections_per_address, 2);
  EXPECT_EQ(c.monitor_limits.first_byte_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(c.monitor_limits.stream_stall_timeout, std::chrono::milliseconds(3'000));
  EXPECT_EQ(c.monitor_limits.stream_send_buffer_kb, 4);
  const std::pair<const char*, const char*> bad[] = {
      {"max_connections = 0", "key 'monitor.max_connections' = 0 must be in [1, 4096]"},
      {"max_connections_per_address = 5000",
       "key 'monitor.max_connections_per_address' = 5000 must be in [1, 4096]"},
      {"max_streams = 0", "key 'monitor.max_streams' = 0 must be in [1, 4096]"},
      {"first_byte_timeout_s = 20",
       "key 'monitor.first_byte_timeout_s' = 20 s must be in (0, monitor.request_timeout_s = 10 "
       "s]"},
      {"request_timeout_s = 0", "key 'monitor.request_timeout_s' = 0 s must be in (0, 300]"},
      {"stream_stall_timeout_s = 0.2",
       "key 'monitor.stream_stall_timeout_s' = 0.2 s must be in [1, 3600]"},
      {"stream_send_buffer_kb = 100000",
       "key 'monitor.stream_send_buffer_kb' = 100000 must be in [0, 65536]"},
      {"listen = \"127.0.0.1:0\"\nlinger_s = 4000",
       "key 'monitor.linger_s' = 4000 s must be in [0, 3600]"},
      {"linger_s = 15",
       "key 'monitor.linger_s' keeps the monitor serving after the run, but monitor.listen is "
       "empty"},
  };
  for (const auto& [line, message] : bad) {
    CoordinatorConfig b;
    s = Load(std::string("[monitor]\n") + line + "\n", &b);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << line;
    EXPECT_NE(s.message().find(message), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace tributary
