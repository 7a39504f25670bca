#include "privacy/dp/dp_config.h"

#include <fmt/format.h>

#include <cmath>

namespace tributary {

double DpConfig::EffectiveDelta() const {
  if (delta > 0.0) return delta;
  return std::pow(static_cast<double>(population), -1.1);
}

double DpConfig::ExpectedClients(int64_t clients_per_round) const {
  return static_cast<double>(expected_clients > 0 ? expected_clients : clients_per_round);
}

double DpConfig::CountNoise(int64_t clients_per_round) const {
  if (!adaptive()) return 0.0;
  return adaptive_count_noise > 0.0 ? adaptive_count_noise
                                    : ExpectedClients(clients_per_round) / 20.0;
}

double DpConfig::UpdateNoiseMultiplier(int64_t clients_per_round) const {
  if (!adaptive() || noise_multiplier == 0.0) return noise_multiplier;
  const double sb = CountNoise(clients_per_round);
  const double rest = 1.0 / (noise_multiplier * noise_multiplier) - 1.0 / (4.0 * sb * sb);
  return rest > 0.0 ? 1.0 / std::sqrt(rest) : 0.0;
}

Status DpConfig::Validate(int64_t clients_per_round) const {
  if (!enabled) return Status::Ok();
  auto bad = [](const std::string& what) { return Status::InvalidArgument("key " + what); };
  if (placement != "server" && placement != "client")
    return bad(fmt::format("'dp.placement' = '{}' must be 'server' or 'client'", placement));
  if (!ParseDpSampling(sampling).ok())
    return bad(fmt::format("'dp.sampling' = '{}' must be 'fixed' or 'poisson'", sampling));
  if (!(noise_multiplier >= 0.0) || noise_multiplier > 1e6)
    return bad(
        fmt::format("'dp.noise_multiplier' = {} must be in [0, 1e6] (0: clipping only, no "
                    "privacy guarantee)",
                    noise_multiplier));
  if (!(clip_norm > 0.0) || clip_norm > 1e6)
    return bad(fmt::format("'dp.clip_norm' = {} must be in (0, 1e6]", clip_norm));
  if (population < 0) return bad("'dp.population' must be >= 0");
  if (population > 0 && population < clients_per_round)
    return bad(fmt::format("'dp.population' = {} is smaller than run.clients_per_round = {}",
                           population, clients_per_round));
  if (sampling == "poisson" && population == 0)
    return bad(
        "'dp.population' must be set with dp.sampling = 'poisson': each client joins a round "
        "with probability run.clients_per_round / dp.population");
  if (delta == 0.0 && population == 0)
    return bad(
        "'dp.delta' or 'dp.population' must be set: the default delta is 1 / population^1.1");
  if (!(delta >= 0.0 && delta < 1.0))
    return bad(fmt::format("'dp.delta' = {} must be in (0, 1)", delta));
  if (expected_clients < 0) return bad("'dp.expected_clients' must be >= 0 (0: K)");
  if (!(target_epsilon >= 0.0)) return bad("'dp.target_epsilon' must be >= 0 (0: no budget)");
  if (!(adaptive_quantile >= 0.0 && adaptive_quantile < 1.0))
    return bad(fmt::format("'dp.adaptive_quantile' = {} must be in [0, 1) (0: a fixed clip norm)",
                           adaptive_quantile));
  if (adaptive()) {
    if (!(adaptive_lr > 0.0 && adaptive_lr <= 10.0))
      return bad(fmt::format("'dp.adaptive_lr' = {} must be in (0, 10]", adaptive_lr));
    if (!(adaptive_count_noise >= 0.0)) return bad("'dp.adaptive_count_noise' must be >= 0");
    if (client_placement())
      return bad(
          "'dp.adaptive_quantile' needs dp.placement = 'server': with the noise added on the "
          "clients the coordinator cannot count the unclipped updates");
    const double sb = CountNoise(clients_per_round);
    if (noise_multiplier > 0.0 && 2.0 * sb <= noise_multiplier)
      return bad(fmt::format(
          "'dp.adaptive_count_noise' = {} is too small for dp.noise_multiplier = {}: the count "
          "alone would spend the round's budget (it needs 2 * sigma_b > z)",
          sb, noise_multiplier));
  }
  return Status::Ok();
}

void BindDpConfig(ConfigSchema& s, DpConfig* dp) {
  s.Bind("dp.enabled", &dp->enabled,
         "user-level differential privacy, DP-FedAvg with an accountant (docs/privacy.md)");
  s.Bind("dp.placement", &dp->placement,
         "where the noise is added: 'server', or 'client' (each adds its share; needs secagg)");
  s.Bind("dp.sampling", &dp->sampling,
         "'fixed' (K clients per round) or 'poisson' (each with probability K / dp.population)");
  s.Bind("dp.noise_multiplier", &dp->noise_multiplier,
         "z: the noise's standard deviation is z * dp.clip_norm");
  s.Bind("dp.clip_norm", &dp->clip_norm,
         "C: each client's update is clipped to this L2 norm (the start when adaptive)");
  s.Bind("dp.population", &dp->population,
         "N: the clients rounds are sampled from (the simulator: data.num_clients)");
  s.Bind("dp.expected_clients", &dp->expected_clients,
         "the fixed denominator of the noised sum (0: run.clients_per_round)");
  s.Bind("dp.delta", &dp->delta, "the delta epsilon is reported at (0: 1 / population^1.1)");
  s.Bind("dp.target_epsilon", &dp->target_epsilon,
         "the budget: the run stops before a round that would exceed it (0: none)");
  s.Bind("dp.adaptive_quantile", &dp->adaptive_quantile,
         "adaptive clipping: the clip norm follows this quantile of update norms (0: fixed)");
  s.Bind("dp.adaptive_lr", &dp->adaptive_lr, "adaptive clipping's geometric learning rate");
  s.Bind("dp.adaptive_count_noise", &dp->adaptive_count_noise,
         "adaptive clipping: the noise on the unclipped count (0: expected clients / 20)");
  s.Bind("dp.noise_seed", &dp->noise_seed,
         "0: noise from OpenSSL's generator; else reproducible noise, for experiments only")
      .Secret();
}

}  // namespace tributary
