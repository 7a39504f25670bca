#include "sim/sim_result.h"

namespace tributary {

SimRound SimRoundOf(const RoundClosed& closed) {
  const RoundSummary& s = closed.summary;
  SimRound r;
  r.round = s.round;
  r.attempts = s.attempts;
  r.selected = s.selected;
  r.accepted = s.accepted;
  r.refused = s.refused;
  r.dropped = s.dropped;
  r.bytes_up = s.bytes_up;
  r.bytes_down = s.bytes_down;
  if (auto it = s.client_metrics.find("train_loss"); it != s.client_metrics.end())
    r.train_loss = it->second;
  if (s.dp) {
    r.dp = true;
    r.epsilon = s.dp->epsilon;
    r.dp_clip_norm = s.dp->clip_norm;
    r.dp_clipped = s.dp->clipped;
  }
  if (s.staleness) {
    r.async = true;
    r.staleness_mean = s.staleness->mean;
    r.staleness_max = s.staleness->max;
    r.in_flight = s.staleness->in_flight;
  }
  if (s.split) r.split_server_seconds = s.split->server_seconds;
  if (closed.evaluation) {
    r.evaluated = true;
    r.test_accuracy = closed.evaluation->accuracy;
    r.test_loss = closed.evaluation->loss;
  }
  return r;
}

const SimRound& SimResult::Append(SimRound r, double target_accuracy) {
  r.cum_bytes_up = (rounds.empty() ? 0 : rounds.back().cum_bytes_up) + r.bytes_up;
  r.cum_bytes_down = (rounds.empty() ? 0 : rounds.back().cum_bytes_down) + r.bytes_down;
  if (target_accuracy > 0 && target_round == 0 && r.evaluated &&
      r.test_accuracy >= target_accuracy) {
    target_round = r.round;
    target_wall_seconds = r.wall_clock;
    target_sim_seconds = r.sim_clock;
  }
  rounds.push_back(std::move(r));
  return rounds.back();
}

SimRound SimResult::SecAggTotals() const {
  SimRound sum;
  for (const SimRound& r : rounds) {
    sum.secagg_bytes_up += r.secagg_bytes_up;
    sum.secagg_bytes_down += r.secagg_bytes_down;
    sum.secagg_clients += r.secagg_clients;
    sum.secagg_client_seconds += r.secagg_client_seconds;
    sum.secagg_server_seconds += r.secagg_server_seconds;
  }
  return sum;
}

SimRound SimResult::SplitTotals() const {
  SimRound sum;
  for (const SimRound& r : rounds) {
    sum.split_batches += r.split_batches;
    sum.split_bytes_up += r.split_bytes_up;
    sum.split_bytes_down += r.split_bytes_down;
    sum.split_server_seconds += r.split_server_seconds;
  }
  return sum;
}

SimRound SimResult::TierTotals() const {
  SimRound sum;
  for (const SimRound& r : rounds) {
    sum.coordinator_update_seconds += r.coordinator_update_seconds;
    sum.tier = sum.tier || r.tier;
    sum.tier_bytes_up += r.tier_bytes_up;
    sum.tier_bytes_down += r.tier_bytes_down;
    sum.aggregator_seconds += r.aggregator_seconds;
  }
  return sum;
}

}  // namespace tributary
