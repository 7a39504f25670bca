// SimTier: the simulator's model of the aggregation tier (docs/tier.md; docs/simulation.md, "The
// aggregation tier"). With tier.aggregators = A > 0, virtual client i joins through simulated
// aggregator i mod A ("sim-aggregator-K"), and a synchronous round runs as it does through real
// `tributary-aggregator` processes:
//   - the coordinator's tasks for an aggregator's clients travel as one GroupTask (framed through
//     the wire format and counted), over the aggregator's link to the coordinator;
//   - each aggregator runs the real GroupShare (aggregator/group_share.h): it judges and folds its
//     clients' updates into an exact partial sum, and sends its GroupResult when every member has
//     answered or left, once its share of the round's quota is in, or at its flush time (the
//     aggregator's default --flush-margin-s before its deadline), as AggregatorService does;
//   - the result travels back over the link, through the coordinator's decoder, into the engine's
//     OnGroupResult.
// A round through the tier therefore gives bitwise the model of the same round without it when the
// same updates are folded (every selected one, for instance), and shows what the tier costs: each
// aggregator's link adds two transfers to a round, and a group waits for its slowest member (or
// its flush time) before the coordinator sees any of it, where one coordinator closes a round at
// its quota. The aggregators' and the coordinator's compute is measured in wall time.
//
// Link time per transfer: latency + framed bytes * 8 / (link_mbps * 10^6) (no bandwidth term when
// link_mbps is 0). The clients' own links are the DeviceModel's, to their aggregator.
//
// Not thread-safe: the simulator's run thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aggregator/group_share.h"
#include "coordinator/run_config.h"
#include "coordinator/run_engine.h"
#include "tributary/result.h"

namespace tributary {

struct TierModelConfig {
  int64_t aggregators = 0;  // 0: every client connects to the coordinator
  double link_mbps = 0.0;   // each aggregator's link to the coordinator; 0: unlimited
  double latency_ms = 0.0;  // per transfer on that link

  // InvalidArgument naming the tier.* key out of range.
  Status Validate() const;
};

class SimTier {
 public:
  // InvalidArgument when the run cannot go through a tier (WhyNotThroughTier), naming why.
  static Result<std::unique_ptr<SimTier>> Create(const TierModelConfig& config,
                                                 const RunConfig& run, const Strategy& strategy,
                                                 const ModelWeights& zero);

  int64_t size() const { return static_cast<int64_t>(names_.size()); }
  // The aggregator client `index` joins through, and its name (the engine's `via`).
  int64_t Of(uint64_t index) const { return static_cast<int64_t>(index % names_.size()); }
  const std::string& Name(int64_t aggregator) const { return names_[aggregator]; }

  // A round attempt begins at simulated second t0: `tasks` (the engine's, every one for a client
  // behind an aggregator) go out as one GroupTask per aggregator, each starting a GroupShare when
  // it arrives. Returns the seconds after t0 at which the aggregators hold their tasks (every
  // group's task is the same size but for its member list; the largest is taken for all).
  Result<double> Begin(const std::vector<RunEngine::Outgoing>& tasks, double t0);
  // A member's update reaches its aggregator at simulated second t; the refusal when the
  // aggregator refuses it. `sender` is the client's record (its Hello).
  std::optional<UpdateRefusal> OnUpdate(int64_t aggregator, const std::string& id,
                                        const UpdateSubmission& update, const ClientRecord* sender,
                                        double t);
  // A member left before answering.
  void OnLeft(int64_t aggregator, const std::string& id);
  // The simulated second at which the aggregator's group result is due whatever is missing (none
  // when it holds no share this attempt).
  std::optional<double> FlushAt(int64_t aggregator) const;

  // A group result on its way to the coordinator: it arrives at `arrives`, as the coordinator's
  // decoder made it (its partial sum still encoded: decoding it is the coordinator's work).
  struct Sent {
    double arrives = 0.0;
    int64_t aggregator = 0;
    GroupResult result;
  };
  // The aggregator's result when it is due at simulated second t, sent; none when not due.
  Result<std::optional<Sent>> TakeIfDue(int64_t aggregator, double t);

  // Counts since the last TakeCounts: framed bytes of the group tasks (down) and results (up) on
  // the aggregators' links, and the aggregators' wall seconds judging, folding and encoding.
  struct Counts {
    uint64_t bytes_down = 0, bytes_up = 0;
    double seconds = 0.0;
  };
  Counts TakeCounts();

 private:
  SimTier() = default;
  double LinkSeconds(uint64_t bytes) const;

  TierModelConfig config_;
  TierConfig tier_;
  ModelWeights zero_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<GroupShare>> shares_;  // per aggregator; null: none this attempt
  Counts counts_;
};

}  // namespace tributary
