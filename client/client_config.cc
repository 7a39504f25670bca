#include "client/client_config.h"

#include <fmt/format.h>

#include "core/file_util.h"
#include "core/rng.h"
#include "train/device.h"
#include "train/model_file.h"

namespace tributary {
namespace {

Status Bad(const char* key, const char* flag, const std::string& what) {
  return Status::InvalidArgument(fmt::format("{} ({}) {}", key, flag, what));
}

}  // namespace

void BindClientConfig(ConfigSchema& s, ClientConfig* c) {
  s.Bind("log_level", &c->log_level, "trace, debug, info, warn or error").Flag("--log-level");
  s.Bind("net.coordinator", &c->coordinator,
         "the coordinator's host:port, or several endpoints separated by commas (an aggregation "
         "tier's: the first is tried first, then another on failure); required")
      .Flag("--coordinator");
  s.Bind("net.server_name", &c->server_name,
         "the name the coordinator's certificate must carry (\"\": the host of net.coordinator)")
      .Flag("--server-name");
  s.Bind("net.heartbeat_interval_s", &c->heartbeat_interval,
         "heartbeat period (0: the coordinator's)")
      .Flag("--heartbeat-interval-s");
  s.Bind("net.connect_timeout_s", &c->connect_timeout,
         "TCP connect plus TLS handshake must finish within this");
  s.Bind("tls.ca", &c->ca, "CA certificate (PEM); required").Flag("--ca").Path();
  s.Bind("tls.cert", &c->cert, "this client's certificate (PEM); required").Flag("--cert").Path();
  s.Bind("tls.key", &c->key, "this client's private key (PEM); required").Flag("--key").Path();
  s.Bind("state_dir", &c->state_dir, "local state directory, created if missing (\"\": none)")
      .Flag("--state-dir")
      .Path();
  s.Bind("device", &c->device, "cpu, auto or cuda[:N]").Flag("--device");
  s.Bind("train.threads", &c->threads, kCpuThreadsHelp).Flag("--threads");
  s.Bind("run.model", &c->model,
         "the coordinator's model: a built-in model (mlp, cnn, lenet) or a model file (.toml)")
      .Flag("--model")
      .Path(IsModelFilePath);
  s.Bind("run.init_seed", &c->init_seed,
         "seeds the initial weights (the coordinator sends its own)")
      .Flag("--init-seed");
  s.Bind("split.enabled", &c->split,
         "split learning (docs/split.md): train the device part of run.model, cut at split.cut, "
         "through the coordinator's server part (its run must set split.mode)")
      .Flag("--split");
  s.Bind("split.cut", &c->split_cut,
         "split learning: the device part holds layers 0 .. cut-1 (0: the model file's cut); the "
         "coordinator's split.cut")
      .Flag("--split-cut");
  s.Bind("split.head", &c->split_head,
         "split learning, U-shaped: this device also holds layers head .. end and keeps the "
         "labels (0: off); the coordinator's split.head")
      .Flag("--split-head");
  BindDataConfig(s, &c->data, /*partitioned=*/true);
  s.Bind("data.client_index", &c->client_index, "this client's share, in [0, data.num_clients)")
      .Flag("--client-index");
  s.Bind("data.eval_examples", &c->eval_examples,
         "cap on this client's share of the test set (0: all of it)")
      .Flag("--eval-examples");
  s.Bind("backoff.initial_s", &c->backoff_initial, "first reconnect delay")
      .Flag("--backoff-initial-s");
  s.Bind("backoff.max_s", &c->backoff_max, "longest reconnect delay").Flag("--backoff-max-s");
  s.Bind("backoff.multiplier", &c->backoff_multiplier, "each delay is this times the last, >= 1");
  s.Bind("backoff.jitter", &c->backoff_jitter, "random fraction taken off each delay, in [0, 1]")
      .Flag("--backoff-jitter");
  s.Bind("backoff.max_attempts", &c->max_attempts,
         "give up after this many failed connection attempts in a row (0: never)")
      .Flag("--max-attempts");
  s.Bind("backoff.seed", &c->backoff_seed,
         "seed of the reconnect jitter, mixed with the index (0: drawn per client)")
      .Flag("--backoff-seed");
  s.Rename("coordinator", "net.coordinator");
  s.Rename("server_name", "net.server_name");
  s.Rename("heartbeat_ms", "net.heartbeat_interval_s");
  s.Rename("model", "run.model");
  s.Rename("seed", "run.init_seed");
  s.Rename("data.partition_seed", "data.seed");
  s.Rename("backoff.initial_ms", "backoff.initial_s");
  s.Rename("backoff.max_ms", "backoff.max_s");
}

Status ValidateClientDataKeys(const ClientConfig& o) {
  TRIB_RETURN_IF_ERROR(o.data.Validate());
  if (o.data.num_clients > 1'000'000)
    return Bad("data.num_clients", "--num-clients",
               fmt::format("= {} must be in [1, 1000000]", o.data.num_clients));
  if (o.client_index < 0 || o.client_index >= o.data.num_clients)
    return Bad("data.client_index", "--client-index",
               fmt::format("= {} must be in [0, data.num_clients = {})", o.client_index,
                           o.data.num_clients));
  if (o.eval_examples < 0)
    return Bad("data.eval_examples", "--eval-examples",
               fmt::format("= {} must be >= 0 (0 = all)", o.eval_examples));
  if (o.data.dataset == "files" && o.data.train.empty())
    return Bad("data.train", "--train-data",
               "is required with data.dataset = 'files': the client trains on its share of it");
  return Status::Ok();
}

Status ValidateClientConfig(const ClientConfig& o) {
  if (o.coordinator.empty())
    return Bad("net.coordinator", "--coordinator", "is required: the coordinator's host:port");
  if (o.ca.empty()) return Bad("tls.ca", "--ca", "is required: the CA certificate (PEM)");
  if (o.cert.empty())
    return Bad("tls.cert", "--cert", "is required: this client's certificate (PEM)");
  if (o.key.empty()) return Bad("tls.key", "--key", "is required: this client's private key");
  TRIB_RETURN_IF_ERROR(ValidateClientDataKeys(o));
  if (o.heartbeat_interval > std::chrono::hours(1))
    return Bad("net.heartbeat_interval_s", "--heartbeat-interval-s",
               "must be in [0, 3600] (0 = the coordinator's)");
  if (o.backoff_initial < std::chrono::milliseconds(1) ||
      o.backoff_initial > std::chrono::hours(24))
    return Bad("backoff.initial_s", "--backoff-initial-s",
               "must be in [0.001, 86400] (0 would retry a refused connection in a tight loop)");
  if (o.backoff_max < o.backoff_initial || o.backoff_max > std::chrono::hours(24))
    return Bad("backoff.max_s", "--backoff-max-s",
               fmt::format("= {} must be in [backoff.initial_s = {}, 86400]",
                           o.backoff_max.count() / 1000.0, o.backoff_initial.count() / 1000.0));
  if (!(o.backoff_jitter >= 0.0 && o.backoff_jitter <= 1.0))
    return Bad("backoff.jitter", "--backoff-jitter",
               fmt::format("= {} must be in [0, 1]", o.backoff_jitter));
  if (o.max_attempts < 0)
    return Bad("backoff.max_attempts", "--max-attempts",
               fmt::format("= {} must be >= 0 (0 = retry until stopped)", o.max_attempts));
  if (o.split_cut < 0)
    return Bad("split.cut", "--split-cut",
               fmt::format("= {} must be >= 0 (0 = the model file's cut)", o.split_cut));
  if (o.split_head < 0)
    return Bad("split.head", "--split-head",
               fmt::format("= {} must be >= 0 (0 = no head: the labels go to the server part)",
                           o.split_head));
  return ToClientOptions(o, 0).Validate();
}

Status CheckClientFiles(const ClientConfig& o) {
  const struct {
    const char* key;
    const char* flag;
    const std::string& path;
  } files[] = {
      {"tls.ca", "--ca", o.ca}, {"tls.cert", "--cert", o.cert}, {"tls.key", "--key", o.key}};
  for (const auto& f : files)
    TRIB_RETURN_IF_ERROR(CheckReadableFile(fmt::format("{} ({})", f.key, f.flag), f.path));
  return Status::Ok();
}

ClientOptions ToClientOptions(const ClientConfig& o, uint64_t num_examples) {
  ClientOptions c;
  c.split = o.split;
  c.coordinator = o.coordinator;
  c.server_name = o.server_name;
  c.ca_cert_file = o.ca;
  c.cert_file = o.cert;
  c.key_file = o.key;
  c.state_dir = o.state_dir;
  c.device = o.device;
  c.num_examples = num_examples;
  c.backoff.initial_delay = o.backoff_initial;
  c.backoff.max_delay = o.backoff_max;
  c.backoff.multiplier = o.backoff_multiplier;
  c.backoff.jitter = o.backoff_jitter;
  c.backoff.max_attempts = o.max_attempts;
  // Clients that share a config must not retry in lockstep: 0 lets each draw its own seed; a seed
  // that was set is mixed with the index (and stays deterministic).
  c.backoff.seed = o.backoff_seed == 0
                       ? 0
                       : DeriveSeed(o.backoff_seed, {static_cast<uint64_t>(o.client_index)}) | 1;
  c.heartbeat_interval = o.heartbeat_interval;
  c.connect_timeout = o.connect_timeout;
  return c;
}

}  // namespace tributary
