#include "sim/sim_config.h"

#include "compression/codec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>
#include <vector>

namespace tributary {
namespace {

struct Key {
  const char* name;
  std::variant<std::string*, int64_t*, uint64_t*, double*, int*, float*> target;
};

std::vector<Key> Keys(SimConfig* c) {
  HeterogeneityConfig& h = c->hetero;
  return {
      {"model", &c->model},
      {"dataset", &c->dataset},
      {"data_dir", &c->data_dir},
      {"train_examples", &c->train_examples},
      {"test_examples", &c->test_examples},
      {"partition", &c->partition},
      {"clients", &c->clients},
      {"per_round", &c->per_round},
      {"rounds", &c->rounds},
      {"over_selection", &c->over_selection},
      {"min_completed", &c->min_completed},
      {"round_timeout_s", &c->round_timeout_s},
      {"seed", &c->seed},
      {"init_seed", &c->init_seed},
      {"threads", &c->threads},
      {"strategy", &c->strategy},
      {"codec", &c->codec},
      {"download_codec", &c->download_codec},
      {"trainer", &c->trainer},
      {"eval_every", &c->eval_every},
      {"eval_batch", &c->eval_batch},
      {"target_accuracy", &c->target_accuracy},
      {"report_dir", &c->report_dir},
      {"fit.epochs", &c->fit.epochs},
      {"fit.batch_size", &c->fit.batch_size},
      {"fit.lr", &c->fit.lr},
      {"fit.momentum", &c->fit.momentum},
      {"fit.weight_decay", &c->fit.weight_decay},
      {"fit.proximal_mu", &c->fit.proximal_mu},
      {"fit.max_steps", &c->fit.max_steps},
      {"synthetic.height", &c->synthetic_height},
      {"synthetic.width", &c->synthetic_width},
      {"synthetic.noise", &c->synthetic_noise},
      {"hetero.speed_tiers", &h.speed_tiers},
      {"hetero.samples_per_s", &h.samples_per_s},
      {"hetero.speed_sigma", &h.speed_sigma},
      {"hetero.availability", &h.availability},
      {"hetero.dropout", &h.dropout},
      {"hetero.down_mbps", &h.down_mbps},
      {"hetero.up_mbps", &h.up_mbps},
      {"hetero.bandwidth_sigma", &h.bandwidth_sigma},
      {"hetero.latency_ms", &h.latency_ms},
      {"residual.max_age_rounds", &c->residual_max_age_rounds},
      {"residual.keep_fraction", &c->residual_keep_fraction},
      {"attack.kind", &c->attack.kind},
      {"attack.fraction", &c->attack.fraction},
      {"attack.scale", &c->attack.scale},
      {"attack.noise_std", &c->attack.noise_std},
      {"attack.alie_z", &c->attack.alie_z},
  };
}

Status Bad(const char* key, const std::string& why) {
  return Status::InvalidArgument(fmt::format("key '{}' {}", key, why));
}

}  // namespace

const std::vector<std::string>& SimConfigKeys() {
  static const std::vector<std::string> names = [] {
    SimConfig c;
    std::vector<std::string> out;
    for (const Key& k : Keys(&c)) out.emplace_back(k.name);
    return out;
  }();
  return names;
}

Status LoadSimConfig(const Config& cfg, SimConfig* out) {
  // Every key must be known: walk the document and compare against the table.
  for (const auto& [k, v] : cfg.table()) {
    const std::string key(k.str());
    if (v.is_table()) {
      for (const auto& [k2, v2] : *v.as_table()) {
        (void)v2;
        const std::string dotted = key + "." + std::string(k2.str());
        const auto& names = SimConfigKeys();
        if (std::find(names.begin(), names.end(), dotted) == names.end())
          return Status::InvalidArgument(cfg.source() + ": unknown key '" + dotted + "'");
      }
      continue;
    }
    const auto& names = SimConfigKeys();
    if (std::find(names.begin(), names.end(), key) == names.end())
      return Status::InvalidArgument(cfg.source() + ": unknown key '" + key + "'");
  }
  for (const Key& k : Keys(out)) {
    Status st = std::visit(
        [&](auto* dst) -> Status {
          using T = std::remove_pointer_t<decltype(dst)>;
          if constexpr (std::is_same_v<T, std::string>) {
            TRIB_ASSIGN_OR_RETURN(*dst, cfg.GetString(k.name, *dst));
          } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
            TRIB_ASSIGN_OR_RETURN(double v, cfg.GetDouble(k.name, static_cast<double>(*dst)));
            *dst = static_cast<T>(v);
          } else {
            TRIB_ASSIGN_OR_RETURN(int64_t v, cfg.GetInt(k.name, static_cast<int64_t>(*dst)));
            if (std::is_unsigned_v<T> && v < 0)
              return Status::InvalidArgument(cfg.source() + ": key '" + k.name + "' must be >= 0");
            *dst = static_cast<T>(v);
          }
          return Status::Ok();
        },
        k.target);
    TRIB_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Status ApplySimOverride(const std::string& kv, SimConfig* out) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    return Status::InvalidArgument("--set '" + kv + "' is not key=value");
  const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  Result<Config> doc = Config::Parse(key + " = " + value, "--set " + key);
  if (!doc.ok()) {
    std::string quoted;
    for (char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    doc = Config::Parse(key + " = \"" + quoted + "\"", "--set " + key);
  }
  if (!doc.ok()) return doc.status();
  return LoadSimConfig(*doc, out);
}

Status SimConfig::Validate() const {
  if (clients < 1) return Bad("clients", fmt::format("= {} must be >= 1", clients));
  if (per_round < 1 || per_round > clients)
    return Bad("per_round", fmt::format("= {} must be in [1, clients = {}]", per_round, clients));
  if (rounds < 1) return Bad("rounds", fmt::format("= {} must be >= 1", rounds));
  if (!(over_selection >= 1.0) || !std::isfinite(over_selection))
    return Bad("over_selection", fmt::format("= {} must be >= 1", over_selection));
  if (min_completed < 0 || min_completed > per_round)
    return Bad("min_completed", fmt::format("= {} must be in [0, per_round = {}] (0: per_round)",
                                            min_completed, per_round));
  if (!(round_timeout_s > 0.0) || !std::isfinite(round_timeout_s))
    return Bad("round_timeout_s", "must be > 0 (simulated seconds)");
  if (threads < 0 || threads > 1024) return Bad("threads", "must be in [0, 1024] (0: every core)");
  if (fit.epochs < 1) return Bad("fit.epochs", "must be >= 1");
  if (fit.batch_size < 1) return Bad("fit.batch_size", "must be >= 1");
  if (!(fit.lr > 0.0f) || !std::isfinite(fit.lr)) return Bad("fit.lr", "must be > 0");
  if (fit.momentum < 0.0f || fit.momentum >= 1.0f) return Bad("fit.momentum", "must be in [0, 1)");
  if (fit.max_steps < 0) return Bad("fit.max_steps", "must be >= 0");
  if (trainer != "native" && trainer != "noop")
    return Bad("trainer", "= '" + trainer + "' must be 'native' or 'noop'");
  if (eval_every < 0) return Bad("eval_every", "must be >= 0 (0: never)");
  if (eval_batch < 1) return Bad("eval_batch", "must be >= 1");
  if (target_accuracy < 0.0 || target_accuracy > 1.0)
    return Bad("target_accuracy", "must be in [0, 1] (a fraction, 0: none)");
  if (residual_max_age_rounds < 0) return Bad("residual.max_age_rounds", "must be >= 0 (0: never)");
  if (!(residual_keep_fraction > 0.0) || residual_keep_fraction > 1.0)
    return Bad("residual.keep_fraction", "must be in (0, 1]");
  if (report_dir.empty()) return Bad("report_dir", "must not be empty");
  if (Result<std::unique_ptr<Codec>> c = MakeDownloadCodec(download_codec); !c.ok())
    return Bad("download_codec", c.status().message());
  TRIB_RETURN_IF_ERROR(attack.Validate());
  if (trainer == "noop" && attack.parsed_kind() == AttackKind::kLabelFlip)
    return Bad("attack.kind", "= 'label_flip' needs trainer = 'native' (noop does not train)");
  if (synthetic_height < 1 || synthetic_width < 1 || synthetic_height * synthetic_width > 4096)
    return Bad("synthetic.height", "and synthetic.width must be >= 1 with at most 4096 pixels");
  return Status::Ok();
}

}  // namespace tributary
