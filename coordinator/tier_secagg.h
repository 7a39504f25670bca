// TierSecAgg: the coordinator's side of one round attempt's secure aggregation across the tier's
// groups (docs/tier.md, "Secure aggregation per group"). Each aggregator runs one session over its
// group (SecAggRound on the aggregator) with the parameters the coordinator chose for the whole
// round, so every group's sum lives in the same integer domain and modulus; the clients that
// joined the coordinator directly are one more group, whose session the round engine runs. The
// coordinator adds the groups' integer sums modulo 2^sum_bits and decodes once:
//
//   TierSecAgg t(options, groups, wait_until);     // groups: aggregator id ("" = direct) -> ids
//   t.OnResult(aggregator, result) / t.OnGroupSum("", sum, survivors) / t.OnGroupFailed(...)
//   t.OnLeft(id)                                   // a member left: its group may be gone
//   t.complete(now) -> t.Finish()                  // the weighted mean of every survivor
//
// A group is over when its sum or its failure arrived, or every member of it left (its aggregator
// died: nothing will come). The round's sum is complete when every group is over, or at
// `wait_until`, after which a group's result is refused as late. A group's sum must hold at least
// secagg.min_clients survivors (the aggregator's own session enforces it: fewer would tell its
// aggregator too much about each input), name only members of the group, and be exactly the
// session's vector length of values below the modulus; anything else refuses the whole result,
// naming the aggregator, and changes nothing. Finish fails (FailedPrecondition, with the groups'
// reasons) when the survivors of all groups number fewer than `min_survivors`.
//
// What each party learns: an aggregator its group's sum (the weighted sum of its survivors'
// quantized updates, and their total weight); the coordinator every group's sum. See docs/tier.md.
// Not thread-safe: the round engine's strand.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/secagg_round.h"
#include "core/clock.h"
#include "privacy/secagg/int_domain.h"
#include "protocol/messages.h"

namespace tributary {

class TierSecAgg {
 public:
  struct Total {
    std::vector<float> mean;  // the session's coordinates' values, or the dense model's
    uint64_t total_weight = 0;
    size_t survivors = 0;
  };

  // InvalidArgument when the domain does not fit (IntDomain) or does not match the session.
  static Result<std::unique_ptr<TierSecAgg>> Start(
      SecAggRound::Options options, std::map<std::string, std::vector<std::string>> groups,
      TimePoint wait_until, size_t min_survivors);

  // The start message every group's clients receive (the aggregators run their sessions with it).
  const SecAggStartMsg& start_message() const { return start_; }
  const SecAggSession& session() const { return options_.session; }

  // An aggregator's GroupResult with secagg_bits != 0.
  Status OnResult(const std::string& aggregator, const GroupResult& result, TimePoint now);
  // The direct group's session ended: its sum and survivors, or why it failed.
  void OnGroupSum(const std::string& group, const std::vector<uint64_t>& sum,
                  const std::vector<std::string>& survivors);
  void OnGroupFailed(const std::string& group, const std::string& why);
  void OnLeft(const std::string& id);

  // Every group is over, or `now` is past wait_until.
  bool complete(TimePoint now) const;
  TimePoint wait_until() const { return wait_until_; }
  bool has_group(const std::string& group) const { return groups_.count(group) > 0; }
  // The summed groups decoded; FailedPrecondition naming the shortfall and the groups' failures.
  Result<Total> Finish() const;
  // Survivors summed so far.
  size_t survivors() const { return survivors_; }
  // The members of `group` whose inputs its sum does not hold, once that sum was taken: they sent
  // their aggregator no masked input in time (or one it refused). Members that left are not
  // named. Empty before the sum, and for a failed session or a group that never answered: who
  // failed those is not known here.
  std::vector<std::string> Absent(const std::string& group) const;

 private:
  struct Group {
    std::set<std::string> members;    // those not gone
    std::set<std::string> survivors;  // whose inputs the group's sum holds, once it came
    bool summed = false;
    bool over = false;
    std::string failure;
  };
  TierSecAgg(SecAggRound::Options options, IntDomain domain)
      : options_(std::move(options)), domain_(domain) {}
  void Add(const std::vector<uint64_t>& sum);

  SecAggRound::Options options_;
  IntDomain domain_;
  SecAggStartMsg start_;
  std::map<std::string, Group> groups_;
  TimePoint wait_until_{};
  size_t min_survivors_ = 1;
  std::vector<uint64_t> sum_;
  size_t survivors_ = 0;
};

}  // namespace tributary
