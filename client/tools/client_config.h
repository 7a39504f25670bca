// The settings of the tributary-client binary: a TOML file (core/config.h) whose values
// command-line flags override. Every setting has a config key and a flag:
//
//   key                  flag               default
//   coordinator          --coordinator      (required) "host:port"
//   server_name          --server-name      "" (the host of coordinator)
//   state_dir            --state-dir        "" (no local state)
//   model                --model            "mlp"
//   device               --device           "cpu" (cpu, auto, cuda[:N])
//   seed                 --seed             1 (initial weights; the coordinator sends its own)
//   heartbeat_ms         --heartbeat-ms     0 (the coordinator's interval)
//   log_level            --log-level        "info"
//   tls.ca               --ca               (required) CA certificate, PEM
//   tls.cert             --cert             (required) this client's certificate, PEM
//   tls.key              --key              (required) this client's private key, PEM
//   data.dir             --data             Fashion-MNIST directory (Debian's
//   dataset-fashion-mnist) data.train_images    --train-images     IDX files to use instead of
//   Fashion-MNIST; images and data.train_labels    --train-labels       labels go together; the
//   test pair is optional data.test_images     --test-images data.test_labels     --test-labels
//   data.partition       --partition        "iid" (or "dirichlet:ALPHA", "shards:K")
//   data.num_clients     --num-clients      1
//   data.client_index    --client-index     0 (in [0, num_clients))
//   data.partition_seed  --partition-seed   1 (every client must use the same one)
//   data.train_examples  --train-examples   0 (all): use only the first N training examples
//   data.eval_examples   --eval-examples    0 (all of this client's share of the test set)
//   backoff.initial_ms   --backoff-initial-ms  500
//   backoff.max_ms       --backoff-max-ms      30000
//   backoff.jitter       --backoff-jitter      0.5
//   backoff.max_attempts --max-attempts        0 (retry until stopped)
//   backoff.seed         --backoff-seed        0 (mixed with the client index)
//
// Errors name the key (and its flag) and what was wrong.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/config.h"
#include "tributary/client.h"

namespace tributary {

struct ClientCliOptions {
  std::string config_file;
  std::string coordinator;
  std::string server_name;
  std::string state_dir;
  std::string model = "mlp";
  std::string device = "cpu";
  int64_t seed = 1;
  int64_t heartbeat_ms = 0;
  std::string log_level = "info";
  std::string ca, cert, key;

  std::string data_dir;  // empty: the default Fashion-MNIST directory
  std::string train_images, train_labels, test_images, test_labels;
  std::string partition = "iid";
  int64_t num_clients = 1;
  int64_t client_index = 0;
  int64_t partition_seed = 1;
  int64_t train_examples = 0;
  int64_t eval_examples = 0;

  int64_t backoff_initial_ms = 500;
  int64_t backoff_max_ms = 30'000;
  double backoff_jitter = 0.5;
  int64_t max_attempts = 0;
  int64_t backoff_seed = 0;
};

// Every config key, for CheckKnownKeys and documentation.
const std::initializer_list<std::string_view>& ClientConfigKeys();

// Fills every option whose flag was not given (flag_given("--coordinator") is false) from `cfg`.
// InvalidArgument naming the key for unknown keys and values of the wrong type.
Status ApplyClientConfig(const Config& cfg, const std::function<bool(const char* flag)>& flag_given,
                         ClientCliOptions* o);

// Checks the settings together: required values, ranges, pairs that go together. InvalidArgument
// naming the key and flag.
Status ValidateClientCliOptions(const ClientCliOptions& o);

// Checks that the TLS files exist and are readable: NotFound naming the key, flag and path.
Status CheckClientFiles(const ClientCliOptions& o);

// The ClientOptions these settings describe (without on_task).
ClientOptions ToClientOptions(const ClientCliOptions& o, uint64_t num_examples);

}  // namespace tributary
