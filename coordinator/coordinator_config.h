// CoordinatorConfig: everything tributary-coordinator reads from its TOML file and flags, as one
// ConfigSchema (BindCoordinatorConfig). `tributary-coordinator --print-config` lists every key with
// its default; docs/operations.md has the same table (a test compares them).
//
//   log_level, net.listen, net.heartbeat_interval_s, net.client_timeout_s,
//   net.max_handshakes_per_address, net.transfer_budget_mb, net.min_upload_rate_kib_s,
//   net.frame_timeout_s, eval.threads,
//   tls.ca, tls.cert, tls.key, tls.deny_list, output.ready_file,
//   monitor.listen, monitor.token and the monitor's limits (monitor_limits.h),
//   the run (coordinator/run_config.h: run.*, fit.*, eval.*, output.*),
//   the evaluation data (train/data/data_config.h: data.*, without the partition keys)
#pragma once

#include <chrono>
#include <string>

#include "coordinator/monitor_limits.h"
#include "coordinator/run_config.h"
#include "core/config_schema.h"
#include "train/data/data_config.h"

namespace tributary {

struct CoordinatorConfig {
  CoordinatorConfig();

  std::string log_level = "info";
  std::string listen = "0.0.0.0:7700";
  std::chrono::milliseconds heartbeat_interval{5'000};
  std::chrono::milliseconds client_timeout{60'000};
  // Hostile-load limits (docs/operations.md, "Under hostile load"): TLS handshakes in progress
  // from one source address, the MiB all connections may hold in partly received updates, the
  // KiB/s each such update must average to keep its share (TransportOptions::min_message_rate),
  // and the time a started frame has to finish, which is also that rate's grace
  // (TransportOptions::frame_read_timeout).
  int64_t max_handshakes_per_address = 8;
  int64_t transfer_budget_mb = 1024;
  int64_t min_upload_rate_kib_s = 1;
  std::chrono::milliseconds frame_timeout{30'000};
  int64_t eval_threads = 0;  // server-side evaluation's threads; 0: one per core
  std::string tls_ca, tls_cert, tls_key;
  std::string deny_list;  // optional file of revoked client ids
  // Written once accepting: the clients' address ("host:port") on its first line, and with a
  // monitor, "monitor=host:port" (the bound port, when monitor.listen asked for 0) on the second.
  std::string ready_file;
  // The operators' HTTP endpoint (monitor/): "" is off; else host:port serving /metrics, with
  // monitor_token required as a bearer token when set (and when the address is not loopback).
  std::string monitor_listen;
  std::string monitor_token;
  MonitorLimits monitor_limits;
  // After the run ends, the monitor serves its final state (run_finished 1, the last round) this
  // long before the coordinator exits, so that a scraper polling every 15 s sees it; 0: exit at
  // once. SIGINT or SIGTERM ends the wait.
  std::chrono::milliseconds monitor_linger{0};
  RunConfig run;    // output.checkpoint_dir defaults to runs/coordinator
  DataConfig data;  // what server-side evaluation runs on

  // Fills the output paths left empty: <checkpoint_dir>/events.jsonl and final.safetensors.
  void ResolveOutputs();
  // InvalidArgument naming the key.
  Status Validate() const;
};

void BindCoordinatorConfig(ConfigSchema& schema, CoordinatorConfig* config);

}  // namespace tributary
