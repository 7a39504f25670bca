// ClientConfig: the settings of the tributary-client binary, as one ConfigSchema
// (BindClientConfig): a TOML file whose values flags override. `tributary-client --print-config`
// lists every key with its default and flag; docs/operations.md has the same table (a test compares
// them). The data keys (data.*) and the model keys (run.model, run.init_seed) are the ones the
// simulator and the coordinator use for the same things.
//
//   log_level, net.coordinator, net.server_name, net.heartbeat_interval_s, net.connect_timeout_s,
//   tls.ca, tls.cert, tls.key, state_dir, device, train.threads, run.model, run.init_seed,
//   split.enabled, split.cut, split.head,
//   data.* (train/data/data_config.h: the data set, or the user's own files with
//   data.dataset = "files" and data.train, data.test, ...) plus data.client_index and
//   data.eval_examples,
//   backoff.initial_s, backoff.max_s, backoff.multiplier, backoff.jitter, backoff.max_attempts,
//   backoff.seed
//
// Errors name the key (and its flag) and what was wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/config_schema.h"
#include "train/data/data_config.h"
#include "tributary/client.h"

namespace tributary {

struct ClientConfig {
  std::string log_level = "info";
  std::string coordinator;
  std::string server_name;
  std::chrono::milliseconds heartbeat_interval{0};  // 0: the coordinator's
  std::chrono::milliseconds connect_timeout{10'000};
  std::string ca, cert, key;
  std::string state_dir;
  std::string device = "cpu";
  int64_t threads = 0;  // train.threads
  std::string model = "mlp";
  uint64_t init_seed = 1;
  bool split = false;      // split.enabled
  int64_t split_cut = 0;   // split.cut
  int64_t split_head = 0;  // split.head (the U-shaped split; 0: off)

  DataConfig data;
  int64_t client_index = 0;
  int64_t eval_examples = 0;

  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30'000};
  double backoff_multiplier = 2.0;
  double backoff_jitter = 0.5;
  int64_t max_attempts = 0;
  uint64_t backoff_seed = 0;
};

void BindClientConfig(ConfigSchema& schema, ClientConfig* config);

// Checks the settings together: required values, ranges, pairs that go together. InvalidArgument
// naming the key and flag.
Status ValidateClientConfig(const ClientConfig& c);
// The data keys alone (data.*, data.client_index, data.eval_examples): what LoadClientData
// checks before it loads anything, for callers without a coordinator (tributary.load_data).
Status ValidateClientDataKeys(const ClientConfig& c);

// Checks that the TLS files exist and are readable: NotFound naming the key, flag and path.
Status CheckClientFiles(const ClientConfig& c);

// The ClientOptions these settings describe (without on_task).
ClientOptions ToClientOptions(const ClientConfig& c, uint64_t num_examples);

}  // namespace tributary
