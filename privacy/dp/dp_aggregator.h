// DpAggregator: the coordinator's side of DP-FedAvg (dp_config.h) for one run.
//
// A round: BeginRound(dim), then per update either AddUpdate (dp.placement = "server": the update
// is decoded, clipped to the current clip norm C and folded with weight 1) or, once, AddNoisedSum
// (dp.placement = "client": secure aggregation's mean of updates each client clipped and noised
// itself), then Release(q), which returns the released mean delta
//     (sum of clipped updates + N(0, (z_update C)^2)) / expected_clients
// (the noise only with server placement), moves C towards the target quantile when adaptive, and
// charges the round to the accountant at sampling rate q. The sum is fixed point, so the result
// does not depend on the order updates arrive in (the noise is drawn at Release).
//
// A released round is charged as one sampled Gaussian mechanism of multiplier z
// (dp.noise_multiplier; with adaptive clipping the update's and the count's noise together, Andrew
// et al. 2021, Thm 1): under Poisson sampling with add/remove-one adjacency, under fixed-size
// sampling with replace-one adjacency, where one client's change moves the sum by up to 2C
// (rdp_accountant.h).
//
// SaveState/LoadState carry the clip norm and the accountant through checkpoints, as JSON.
//
// Not thread-safe: the round engine calls it from one strand.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "privacy/dp/dp_config.h"
#include "privacy/dp/gaussian_noise.h"
#include "privacy/dp/rdp_accountant.h"
#include "tributary/result.h"

namespace tributary {

// Writes one update into a sink, every value multiplied by `scale` (a codec's decoder).
using DpUpdateWriter = std::function<void(UpdateSink& sink, float scale)>;

struct DpRoundReport {
  double clip_norm = 0.0;         // C used this round
  double noise_stddev = 0.0;      // of the noise on the sum: z_update * C
  double sampling_rate = 0.0;     // q charged
  int64_t clipped = 0;            // updates whose norm exceeded C (server placement)
  double mean_update_norm = 0.0;  // of the updates before clipping (server placement)
  double epsilon = 0.0;           // spent after this round, at delta
  double order = 0.0;             // the Rényi order that gave it
};

class DpAggregator {
 public:
  // `config` validated; `clients_per_round` is run.clients_per_round.
  static Result<std::unique_ptr<DpAggregator>> Create(const DpConfig& config,
                                                      int64_t clients_per_round);

  void BeginRound(size_t dim);
  // Decodes, clips and folds one update; returns its norm before clipping. InvalidArgument for a
  // non-finite norm (nothing is folded then).
  Result<double> AddUpdate(const DpUpdateWriter& writer);
  // Client placement: the mean over `count` clients of their clipped and noised updates, folded
  // with the integer weight `count` (exact, as in WeightedMean). InvalidArgument when a value is
  // not finite or |value * count| >= 2^30.
  Status AddNoisedSum(std::span<const float> mean, uint64_t count);
  // Closes the round: the released mean delta (dim values), charged at sampling rate q.
  Result<std::vector<float>> Release(uint64_t round, double q);

  // Epsilon after the rounds charged so far, and after one more at rate q (for the budget).
  PrivacySpent Spent() const;
  PrivacySpent SpentWithOneMore(double q) const;
  double delta() const { return delta_; }
  double clip_norm() const { return clip_; }
  int64_t rounds_charged() const { return accountant_.steps(); }
  const DpRoundReport& last_round() const { return last_; }
  const DpConfig& config() const { return config_; }

  std::string SaveState() const;
  // InvalidArgument naming what is wrong with `json` (the checkpoint's "privacy" entry).
  Status LoadState(const std::string& json);

 private:
  DpAggregator() = default;
  Result<GaussianNoise> NoiseFor(uint64_t round) const;
  // The multiplier the accountant is charged: z, or z / 2 under replace-one adjacency.
  double AccountedMultiplier() const;

  DpConfig config_;
  double expected_ = 1.0;
  double z_update_ = 0.0;
  double count_noise_ = 0.0;
  double delta_ = 0.0;
  double clip_ = 1.0;
  RdpAccountant accountant_;

  FixedPointSum sum_;  // fixed point, 2^-32 units, exact (compression/update_sink.h)
  std::vector<float> scratch_;
  int64_t added_ = 0, unclipped_ = 0, clipped_ = 0;
  double norm_sum_ = 0.0;
  bool noised_on_clients_ = false;
  DpRoundReport last_;
};

}  // namespace tributary
