#include "coordinator/coordinator_config.h"

#include <cmath>

namespace tributary {
namespace {

// Reads typed keys into fields, remembering the first error.
class Reader {
 public:
  explicit Reader(const Config& c) : c_(c) {}
  template <class T>
  void Int(const char* key, T* dst) {
    if (!st_.ok()) return;
    auto r = c_.GetInt(key, static_cast<int64_t>(*dst));
    if (!r.ok())
      st_ = r.status();
    else if (*r < 0)
      st_ = Status::InvalidArgument(c_.source() + ": key '" + key + "' must be >= 0");
    else
      *dst = static_cast<T>(*r);
  }
  void Double(const char* key, double* dst) {
    if (!st_.ok()) return;
    auto r = c_.GetDouble(key, *dst);
    if (!r.ok())
      st_ = r.status();
    else
      *dst = *r;
  }
  void Float(const char* key, float* dst) {
    double v = *dst;
    Double(key, &v);
    *dst = static_cast<float>(v);
  }
  void String(const char* key, std::string* dst) {
    if (!st_.ok()) return;
    auto r = c_.GetString(key, *dst);
    if (!r.ok())
      st_ = r.status();
    else
      *dst = *r;
  }
  Status status() const { return st_; }

 private:
  const Config& c_;
  Status st_;
};

}  // namespace

Status LoadCoordinatorConfig(const Config& cfg, CoordinatorConfig* o) {
  TRIB_RETURN_IF_ERROR(cfg.CheckKnownKeys({"listen",
                                           "log_level",
                                           "tls.ca",
                                           "tls.cert",
                                           "tls.key",
                                           "tls.deny_list",
                                           "run.model",
                                           "run.init_seed",
                                           "run.strategy",
                                           "run.server_lr",
                                           "run.rounds",
                                           "run.clients_per_round",
                                           "run.fraction",
                                           "run.min_available",
                                           "run.over_selection",
                                           "run.min_completed",
                                           "run.round_timeout_s",
                                           "run.max_round_attempts",
                                           "run.seed",
                                           "run.codec",
                                           "run.download_codec",
                                           "run.heartbeat_interval_s",
                                           "run.client_timeout_s",
                                           "run.min_num_examples",
                                           "run.max_num_examples",
                                           "fit.epochs",
                                           "fit.batch_size",
                                           "fit.lr",
                                           "fit.momentum",
                                           "fit.weight_decay",
                                           "fit.proximal_mu",
                                           "fit.max_steps",
                                           "eval.every",
                                           "eval.data_dir",
                                           "eval.max_examples",
                                           "eval.federated_every",
                                           "output.checkpoint_dir",
                                           "output.event_log",
                                           "output.final_model",
                                           "output.ready_file"}));
  Reader r(cfg);
  RoundConfig& rc = o->round;
  r.String("listen", &o->listen);
  r.String("log_level", &o->log_level);
  r.String("tls.ca", &o->tls_ca);
  r.String("tls.cert", &o->tls_cert);
  r.String("tls.key", &o->tls_key);
  r.String("tls.deny_list", &o->deny_list);
  r.String("run.model", &o->model);
  r.Int("run.init_seed", &o->init_seed);
  r.String("run.strategy", &o->strategy);
  r.Double("run.server_lr", &o->server_lr);
  r.Int("run.rounds", &rc.rounds);
  r.Int("run.clients_per_round", &rc.clients_per_round);
  r.Double("run.fraction", &rc.fraction);
  r.Int("run.min_available", &rc.min_available);
  r.Double("run.over_selection", &rc.over_selection);
  r.Int("run.min_completed", &rc.min_completed);
  double timeout_s = std::chrono::duration<double>(rc.round_timeout).count();
  r.Double("run.round_timeout_s", &timeout_s);
  r.Int("run.max_round_attempts", &rc.max_round_attempts);
  r.Int("run.seed", &rc.seed);
  r.String("run.codec", &rc.codec);
  r.String("run.download_codec", &rc.download_codec);
  r.Double("run.heartbeat_interval_s", &o->heartbeat_interval_s);
  r.Double("run.client_timeout_s", &o->client_timeout_s);
  r.Int("run.min_num_examples", &rc.min_num_examples);
  r.Int("run.max_num_examples", &rc.max_num_examples);
  r.Int("fit.epochs", &rc.fit.epochs);
  r.Int("fit.batch_size", &rc.fit.batch_size);
  r.Float("fit.lr", &rc.fit.lr);
  r.Float("fit.momentum", &rc.fit.momentum);
  r.Float("fit.weight_decay", &rc.fit.weight_decay);
  r.Float("fit.proximal_mu", &rc.fit.proximal_mu);
  r.Int("fit.max_steps", &rc.fit.max_steps);
  r.Int("eval.every", &o->eval_every);
  r.String("eval.data_dir", &o->eval_data_dir);
  r.Int("eval.max_examples", &o->eval_max_examples);
  r.Int("eval.federated_every", &rc.federated_eval_every);
  r.String("output.checkpoint_dir", &o->checkpoint_dir);
  r.String("output.event_log", &o->event_log);
  r.String("output.final_model", &o->final_model);
  r.String("output.ready_file", &o->ready_file);
  TRIB_RETURN_IF_ERROR(r.status());
  if (!(timeout_s > 0) || !std::isfinite(timeout_s))
    return Status::InvalidArgument(cfg.source() + ": key 'run.round_timeout_s' must be positive");
  rc.round_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  if (Status v = rc.Validate(); !v.ok()) return v.WithContext(cfg.source());
  if (!(o->heartbeat_interval_s > 0) || !(o->client_timeout_s > o->heartbeat_interval_s))
    return Status::InvalidArgument(
        cfg.source() +
        ": keys 'run.heartbeat_interval_s' and 'run.client_timeout_s' need "
        "0 < heartbeat interval < client timeout");
  return Status::Ok();
}

}  // namespace tributary
