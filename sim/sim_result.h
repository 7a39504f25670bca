// SimRound and SimResult: what a simulation (in-process or deployed) reports, round by round.
//
// A round's record starts from the run's RoundClosed event, the same in both modes (the engine's
// counts, bytes and the server-side evaluation); the in-process simulator adds what only it can
// know (unreachable clients, dropouts, stragglers, simulated time, framed bytes, attackers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/run_events.h"
#include "train/data/partition.h"
#include "tributary/model_weights.h"

namespace tributary {

struct SimRound {
  uint64_t round = 0;
  int64_t attempts = 0;
  int64_t selected = 0;  // in the attempt that closed the round
  int64_t accepted = 0;  // updates folded in
  int64_t refused = 0;   // refused by the engine (late stragglers included)
  int64_t dropped = 0;   // selected in the closing attempt and never answered (the engine's count)
  // In-process only (0 in deployment):
  int64_t unavailable = 0;  // selected but unreachable (all attempts)
  int64_t dropouts = 0;     // started, then left mid-task (all attempts)
  int64_t stragglers = 0;   // finished after the round had closed or passed its deadline
  // In-process: framed bytes of every update and download (all attempts). Deployment: the
  // engine's payload bytes of the closing attempt.
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t cum_bytes_up = 0, cum_bytes_down = 0;
  double sim_seconds = 0.0;  // simulated duration of the round (all attempts); real in deployment
  double sim_clock = 0.0;    // simulated seconds since the run started, at the round's close
  double wall_seconds = 0.0;
  double wall_clock = 0.0;
  double train_loss = 0.0;  // clients' num_examples-weighted mean
  bool evaluated = false;
  double test_accuracy = 0.0, test_loss = 0.0;
  int64_t malicious = 0;  // malicious clients selected in the attempt that closed the round
  // In-process, with secure aggregation (all attempts): framed bytes of the protocol's messages
  // other than the masked inputs (those replace the updates in bytes_up; these are in bytes_up
  // and bytes_down too), the clients that took part, their compute for the protocol (key
  // agreement, sharing, encoding, masking, unmasking; summed over clients), and the coordinator's
  // compute for it (its unmasking included).
  uint64_t secagg_bytes_up = 0, secagg_bytes_down = 0;
  int64_t secagg_clients = 0;
  double secagg_client_seconds = 0.0, secagg_server_seconds = 0.0;
  // With differential privacy: epsilon spent after this round (at dp.delta; infinite without
  // noise), the clip norm it used and how many updates it clipped (server placement).
  bool dp = false;
  double epsilon = 0.0;
  double dp_clip_norm = 0.0;
  int64_t dp_clipped = 0;
  // An asynchronous step (run.mode = "async"; `round` is then the step): its updates' mean and
  // largest staleness, and the clients training when it was taken.
  bool async = false;
  double staleness_mean = 0.0;
  uint64_t staleness_max = 0;
  int64_t in_flight = 0;
  // In-process (all attempts): the coordinator's wall seconds taking the updates (OnUpdate) or,
  // through a simulated tier (tier.aggregators), the groups' partial sums (OnGroupResult).
  double coordinator_update_seconds = 0.0;
  // Through a simulated tier: framed bytes of the group tasks sent down the aggregators' links
  // and of the group results sent up, and the aggregators' wall seconds judging and folding
  // their clients' updates (summed over aggregators).
  bool tier = false;
  uint64_t tier_bytes_up = 0, tier_bytes_down = 0;
  double aggregator_seconds = 0.0;
  // In-process, split learning (split.mode; all attempts): the batches the clients sent the
  // server part and the framed bytes of their activations and gradients (in bytes_up and
  // bytes_down too).
  uint64_t split_batches = 0;
  uint64_t split_bytes_up = 0, split_bytes_down = 0;
  // Split learning: the server part's compute this round (RoundSummary::split), in wall seconds
  // summed over its threads (simulated time takes it as instantaneous; docs/simulation.md).
  double split_server_seconds = 0.0;
};

// The fields a RoundClosed event determines.
SimRound SimRoundOf(const RoundClosed& closed);

// Populations up to this size get per-client partition statistics (about 100 bytes a client).
inline constexpr uint64_t kPartitionStatsMaxClients = 10000;

struct SimResult {
  std::vector<SimRound> rounds;
  double wall_seconds = 0.0;
  double sim_seconds = 0.0;
  uint64_t model_hash = 0;
  ModelWeights final_model;  // in-process only
  // The first round whose test accuracy reached the target (0: never, or no target).
  uint64_t target_round = 0;
  double target_wall_seconds = 0.0, target_sim_seconds = 0.0;
  double join_seconds = 0.0;  // registering the population with the engine
  // How the training set was split (Population::Stats): absent for replacement:N and for more
  // than kPartitionStatsMaxClients clients.
  std::optional<PartitionStats> partition;
  std::string stopped;  // why the run ended early without failing (the privacy budget)
  // A distributed simulation's exchanges with the other ranks (rank 0's wall clock), summed over
  // the batches of jobs and evaluations: the busiest rank's compute, and the rest of each
  // exchange (sending, receiving, waiting on the link): what MPI costs beyond the work; and the
  // ranks' idle time within the busiest one's (summed over ranks): what imbalance costs.
  int64_t rank_exchanges = 0;
  double rank_compute_seconds = 0.0, rank_link_seconds = 0.0, rank_idle_seconds = 0.0;

  // Appends a closed round: fills its cumulative byte counts from the previous round and notes
  // the first round whose test accuracy reaches `target_accuracy` (> 0). Returns the stored round.
  const SimRound& Append(SimRound round, double target_accuracy);
  // The secure aggregation fields (secagg_*) summed over every round; the rest left at zero.
  SimRound SecAggTotals() const;
  // coordinator_update_seconds and the tier's counts summed over the rounds.
  SimRound TierTotals() const;
  // Split learning's fields (split_*) summed over every round; the rest left at zero.
  SimRound SplitTotals() const;
};

}  // namespace tributary
