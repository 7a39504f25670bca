// CoordinatorConfig: everything tributary-coordinator reads from its TOML file (and flags).
// See docs/operations.md for the file format; LoadCoordinatorConfig names the offending key on
// any error, and unknown keys are errors (a typo must not silently fall back to a default).
#pragma once

#include <string>

#include "coordinator/round_config.h"
#include "core/config.h"

namespace tributary {

struct CoordinatorConfig {
  std::string listen = "0.0.0.0:7700";
  std::string log_level = "info";
  // [tls]
  std::string tls_ca, tls_cert, tls_key;
  std::string deny_list;  // optional file of revoked client ids
  // [run]
  std::string model = "mlp";
  uint64_t init_seed = 1;
  std::string strategy = "fedavg";
  double server_lr = 1.0;
  double heartbeat_interval_s = 5.0;
  double client_timeout_s = 60.0;
  RoundConfig round;
  // [eval]
  int64_t eval_every = 1;     // server-side evaluation every k rounds (0: never)
  std::string eval_data_dir;  // Fashion-MNIST directory; empty: the Debian package's
  int64_t eval_max_examples = 0;
  // [output]
  std::string checkpoint_dir = "runs/coordinator";
  std::string event_log;    // default <checkpoint_dir>/events.jsonl
  std::string final_model;  // default <checkpoint_dir>/final.safetensors
  std::string ready_file;   // written with the listening address once accepting
};

// Reads `cfg` over the defaults in `out`. InvalidArgument naming the key on a type error, an
// unknown key, or an invalid round configuration.
Status LoadCoordinatorConfig(const Config& cfg, CoordinatorConfig* out);

}  // namespace tributary
