// DpConfig: user-level differential privacy of a run, DP-FedAvg (McMahan, Ramage, Talwar, Zhang,
// ICLR 2018), with adaptive clipping (Andrew, Thakkar, McMahan, Ramaswamy, NeurIPS 2021), and its
// configuration keys dp.* (BindDpConfig). docs/privacy.md says what the guarantee covers.
//
// Each round: every sampled client's update is clipped to L2 norm dp.clip_norm (C), the clipped
// updates are summed with weight 1 each, Gaussian noise of standard deviation z * C is added
// (z = dp.noise_multiplier) and the sum is divided by a fixed expected count, so one client moves
// the released model by at most C / expected. Rounds are charged to a Rényi-DP accountant
// (rdp_accountant.h) at the sampling rate of the round; dp.target_epsilon stops the run before a
// round would spend more than the budget.
#pragma once

#include <cstdint>
#include <string>

#include "core/config_schema.h"
#include "privacy/dp/rdp_accountant.h"
#include "tributary/status.h"

namespace tributary {

struct DpConfig {
  bool enabled = false;
  // "server": the coordinator clips each update and adds the noise (it sees each update).
  // "client": each client clips its own update and adds its share of the noise; needs secure
  // aggregation, so the coordinator sees only the noised sum.
  std::string placement = "server";
  // "fixed": K clients of the idle ones each round (sampling without replacement, accounted at
  // K / eligible under replace-one adjacency). "poisson": each idle client independently with
  // probability q = K / dp.population (accounted under add/remove-one adjacency).
  std::string sampling = "fixed";
  double noise_multiplier = 1.0;  // z: the noise's standard deviation over C
  double clip_norm = 1.0;         // C: the L2 bound of one client's update (the start if adaptive)
  int64_t population = 0;         // N, the clients sampling draws from (the simulator: its clients)
  int64_t expected_clients = 0;   // the fixed denominator (0: run.clients_per_round)
  double delta = 0.0;             // 0: 1 / N^1.1
  double target_epsilon = 0.0;    // the budget at dp.delta; 0: none (epsilon is still reported)
  // Adaptive clipping: C follows the dp.adaptive_quantile quantile of the update norms (0: fixed
  // C), estimated from the noisy count of unclipped updates.
  double adaptive_quantile = 0.0;
  double adaptive_lr = 0.2;           // eta_C: C *= exp(-eta_C * (unclipped fraction - quantile))
  double adaptive_count_noise = 0.0;  // sigma_b of the count (0: expected_clients / 20)
  // 0: noise from OpenSSL's generator (RAND_priv_bytes), as a release needs. Otherwise the noise is
  // reproducible from this seed, for experiments only: whoever knows it can remove the noise.
  uint64_t noise_seed = 0;

  bool client_placement() const { return placement == "client"; }
  // The accountant's sampling mode (ParseDpSampling); Validate() has refused any other name.
  DpSampling sampling_mode() const {
    const Result<DpSampling> mode = ParseDpSampling(sampling);
    return mode.ok() ? *mode : DpSampling::kFixedSize;
  }
  bool adaptive() const { return adaptive_quantile > 0.0; }
  // The run's delta: dp.delta, or 1 / population^1.1.
  double EffectiveDelta() const;
  // dp.expected_clients, or `clients_per_round`.
  double ExpectedClients(int64_t clients_per_round) const;
  // Andrew et al.'s split of the budget: the count's noise sigma_b and the noise multiplier left
  // for the update, z_update = (z^-2 - (2 sigma_b)^-2)^-1/2, so that the round is charged as one
  // Gaussian mechanism of multiplier z. Without adaptive clipping z_update = z.
  double CountNoise(int64_t clients_per_round) const;
  double UpdateNoiseMultiplier(int64_t clients_per_round) const;

  // InvalidArgument naming the key when a value is out of range or settings conflict.
  // `clients_per_round` is run.clients_per_round.
  Status Validate(int64_t clients_per_round) const;
};

void BindDpConfig(ConfigSchema& schema, DpConfig* dp);

}  // namespace tributary
