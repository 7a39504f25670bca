#include "client/tools/client_config.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <type_traits>
#include <variant>
#include <vector>

#include "core/rng.h"

namespace tributary {
namespace {

// A setting: its config key, its flag, and where it goes.
struct Setting {
  const char* key;
  const char* flag;
  std::variant<std::string*, int64_t*, double*> target;
};

std::vector<Setting> Settings(ClientCliOptions* o) {
  return {
      {"coordinator", "--coordinator", &o->coordinator},
      {"server_name", "--server-name", &o->server_name},
      {"state_dir", "--state-dir", &o->state_dir},
      {"model", "--model", &o->model},
      {"device", "--device", &o->device},
      {"seed", "--seed", &o->seed},
      {"heartbeat_ms", "--heartbeat-ms", &o->heartbeat_ms},
      {"log_level", "--log-level", &o->log_level},
      {"tls.ca", "--ca", &o->ca},
      {"tls.cert", "--cert", &o->cert},
      {"tls.key", "--key", &o->key},
      {"data.dir", "--data", &o->data_dir},
      {"data.train_images", "--train-images", &o->train_images},
      {"data.train_labels", "--train-labels", &o->train_labels},
      {"data.test_images", "--test-images", &o->test_images},
      {"data.test_labels", "--test-labels", &o->test_labels},
      {"data.partition", "--partition", &o->partition},
      {"data.num_clients", "--num-clients", &o->num_clients},
      {"data.client_index", "--client-index", &o->client_index},
      {"data.partition_seed", "--partition-seed", &o->partition_seed},
      {"data.train_examples", "--train-examples", &o->train_examples},
      {"data.eval_examples", "--eval-examples", &o->eval_examples},
      {"backoff.initial_ms", "--backoff-initial-ms", &o->backoff_initial_ms},
      {"backoff.max_ms", "--backoff-max-ms", &o->backoff_max_ms},
      {"backoff.jitter", "--backoff-jitter", &o->backoff_jitter},
      {"backoff.max_attempts", "--max-attempts", &o->max_attempts},
      {"backoff.seed", "--backoff-seed", &o->backoff_seed},
  };
}

Status Bad(const char* key, const char* flag, const std::string& what) {
  return Status::InvalidArgument(fmt::format("{} ({}) {}", key, flag, what));
}

}  // namespace

const std::initializer_list<std::string_view>& ClientConfigKeys() {
  static const std::initializer_list<std::string_view> keys = {"coordinator",
                                                               "server_name",
                                                               "state_dir",
                                                               "model",
                                                               "device",
                                                               "seed",
                                                               "heartbeat_ms",
                                                               "log_level",
                                                               "tls.ca",
                                                               "tls.cert",
                                                               "tls.key",
                                                               "data.dir",
                                                               "data.train_images",
                                                               "data.train_labels",
                                                               "data.test_images",
                                                               "data.test_labels",
                                                               "data.partition",
                                                               "data.num_clients",
                                                               "data.client_index",
                                                               "data.partition_seed",
                                                               "data.train_examples",
                                                               "data.eval_examples",
                                                               "backoff.initial_ms",
                                                               "backoff.max_ms",
                                                               "backoff.jitter",
                                                               "backoff.max_attempts",
                                                               "backoff.seed"};
  return keys;
}

Status ApplyClientConfig(const Config& cfg, const std::function<bool(const char*)>& flag_given,
                         ClientCliOptions* o) {
  TRIB_RETURN_IF_ERROR(cfg.CheckKnownKeys(ClientConfigKeys()));
  for (const Setting& s : Settings(o)) {
    if (flag_given(s.flag)) continue;
    Status st = std::visit(
        [&](auto* dst) -> Status {
          using T = std::remove_pointer_t<decltype(dst)>;
          if constexpr (std::is_same_v<T, std::string>) {
            TRIB_ASSIGN_OR_RETURN(*dst, cfg.GetString(s.key, *dst));
          } else if constexpr (std::is_same_v<T, int64_t>) {
            TRIB_ASSIGN_OR_RETURN(*dst, cfg.GetInt(s.key, *dst));
          } else {
            TRIB_ASSIGN_OR_RETURN(*dst, cfg.GetDouble(s.key, *dst));
          }
          return Status::Ok();
        },
        s.target);
    TRIB_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Status ValidateClientCliOptions(const ClientCliOptions& o) {
  if (o.coordinator.empty())
    return Bad("coordinator", "--coordinator", "is required: the coordinator's host:port");
  if (o.ca.empty()) return Bad("tls.ca", "--ca", "is required: the CA certificate (PEM)");
  if (o.cert.empty())
    return Bad("tls.cert", "--cert", "is required: this client's certificate (PEM)");
  if (o.key.empty()) return Bad("tls.key", "--key", "is required: this client's private key");
  if (o.num_clients < 1 || o.num_clients > 1'000'000)
    return Bad("data.num_clients", "--num-clients",
               fmt::format("= {} must be in [1, 1000000]", o.num_clients));
  if (o.client_index < 0 || o.client_index >= o.num_clients)
    return Bad(
        "data.client_index", "--client-index",
        fmt::format("= {} must be in [0, data.num_clients = {})", o.client_index, o.num_clients));
  if (o.train_examples < 0)
    return Bad("data.train_examples", "--train-examples",
               fmt::format("= {} must be >= 0 (0 = all)", o.train_examples));
  if (o.eval_examples < 0)
    return Bad("data.eval_examples", "--eval-examples",
               fmt::format("= {} must be >= 0 (0 = all)", o.eval_examples));
  if (o.train_images.empty() != o.train_labels.empty())
    return Bad(o.train_images.empty() ? "data.train_images" : "data.train_labels",
               o.train_images.empty() ? "--train-images" : "--train-labels",
               "is missing: data.train_images and data.train_labels go together");
  if (o.test_images.empty() != o.test_labels.empty())
    return Bad(o.test_images.empty() ? "data.test_images" : "data.test_labels",
               o.test_images.empty() ? "--test-images" : "--test-labels",
               "is missing: data.test_images and data.test_labels go together");
  if (!o.test_images.empty() && o.train_images.empty())
    return Bad("data.test_images", "--test-images",
               "needs data.train_images and data.train_labels as well");
  if (o.heartbeat_ms < 0 || o.heartbeat_ms > 3'600'000)
    return Bad("heartbeat_ms", "--heartbeat-ms",
               fmt::format("= {} must be in [0, 3600000] (0 = the coordinator's)", o.heartbeat_ms));
  if (o.backoff_initial_ms < 0 || o.backoff_initial_ms > 86'400'000)
    return Bad("backoff.initial_ms", "--backoff-initial-ms",
               fmt::format("= {} must be in [0, 86400000]", o.backoff_initial_ms));
  if (o.backoff_max_ms < o.backoff_initial_ms || o.backoff_max_ms > 86'400'000)
    return Bad("backoff.max_ms", "--backoff-max-ms",
               fmt::format("= {} must be in [backoff.initial_ms = {}, 86400000]", o.backoff_max_ms,
                           o.backoff_initial_ms));
  if (!(o.backoff_jitter >= 0.0 && o.backoff_jitter <= 1.0))
    return Bad("backoff.jitter", "--backoff-jitter",
               fmt::format("= {} must be in [0, 1]", o.backoff_jitter));
  if (o.max_attempts < 0)
    return Bad("backoff.max_attempts", "--max-attempts",
               fmt::format("= {} must be >= 0 (0 = retry until stopped)", o.max_attempts));
  return ToClientOptions(o, 0).Validate();
}

Status CheckClientFiles(const ClientCliOptions& o) {
  const struct {
    const char* key;
    const char* flag;
    const std::string& path;
  } files[] = {
      {"tls.ca", "--ca", o.ca}, {"tls.cert", "--cert", o.cert}, {"tls.key", "--key", o.key}};
  for (const auto& f : files) {
    if (::access(f.path.c_str(), R_OK) != 0)
      return Status::NotFound(
          fmt::format("{} ({}): cannot read {}: {}", f.key, f.flag, f.path, std::strerror(errno)));
  }
  return Status::Ok();
}

ClientOptions ToClientOptions(const ClientCliOptions& o, uint64_t num_examples) {
  ClientOptions c;
  c.coordinator = o.coordinator;
  c.server_name = o.server_name;
  c.ca_cert_file = o.ca;
  c.cert_file = o.cert;
  c.key_file = o.key;
  c.state_dir = o.state_dir;
  c.device = o.device;
  c.num_examples = num_examples;
  c.backoff.initial_delay = std::chrono::milliseconds(o.backoff_initial_ms);
  c.backoff.max_delay = std::chrono::milliseconds(o.backoff_max_ms);
  c.backoff.jitter = o.backoff_jitter;
  c.backoff.max_attempts = o.max_attempts;
  // Clients that share a config must not retry in lockstep.
  c.backoff.seed =
      DeriveSeed(static_cast<uint64_t>(o.backoff_seed), {static_cast<uint64_t>(o.client_index)});
  c.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  return c;
}

}  // namespace tributary
