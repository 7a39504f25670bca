// SecureGroupShare: an aggregator's part of one round with secure aggregation (docs/tier.md,
// "Secure aggregation per group"), as a state machine that knows nothing of sockets. It runs one
// session (SecAggRound, Bonawitz et al. 2017, as the coordinator runs it for its own clients) over
// the members of the coordinator's GroupTask that are connected here, with the parameters of the
// task's SecAggStartMsg: the coordinator chose the integer domain, modulus and vector length for
// the whole round, so this group's sum adds to the others'. Phases end when every member has
// answered or left, or at their deadlines (secagg.phase_timeout; the masked inputs wait until the
// task's deadline, as the clients train first).
//
//   auto s = SecureGroupShare::Start(config, task, connected, now);   // outbox: start, task each
//   s->OnSecAgg(id, msg, now) / OnLeft(id, now) / OnTick(now); s->TakeOutbox()
//   s->over() -> s->TakeResult()                                      // the GroupResult to send
//
// The result is the survivors' inputs summed modulo 2^sum_bits (the aggregator learns that sum:
// its group's weighted sum of quantized updates and total weight, nothing of one input), packed
// like a masked input, with one record per survivor; or, when the session failed (too few
// clients in a phase), no sum and the reason. Not thread-safe: one strand.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/secagg_round.h"
#include "coordinator/tier_config.h"
#include "protocol/messages.h"

namespace tributary {

class SecureGroupShare {
 public:
  struct Outgoing {
    std::string client_id;
    Message message;
  };

  // `connected`: the task's members connected here (the others will not answer).
  // InvalidArgument when the start message does not describe a session this run can hold.
  static Result<std::unique_ptr<SecureGroupShare>> Start(const TierConfig& config,
                                                         const GroupTask& task,
                                                         const std::vector<std::string>& connected,
                                                         TimePoint now);

  uint64_t round() const { return round_; }
  // Whether `id` is one of the session's members (it may be named in the result).
  bool HasMember(const std::string& id) const { return members_.count(id) > 0; }
  // A client's secure aggregation message; the refusal (to send it as an Error) when not taken.
  Status OnSecAgg(const std::string& id, const Message& message, TimePoint now);
  void OnLeft(const std::string& id, TimePoint now);
  // A member's task failed (TaskFailed): the session does not wait for its masked input.
  void OnNoInput(const std::string& id, TimePoint now) { session_->OnNoInput(id, now); }
  void OnTick(TimePoint now);
  std::vector<Outgoing> TakeOutbox();
  std::optional<TimePoint> next_deadline() const { return session_->next_deadline(); }
  // The session is done or failed: TakeResult has the result to send.
  bool over() const { return session_->state() != SecAggRound::State::kRunning; }
  GroupResult TakeResult() const;
  const char* phase_name() const { return session_->phase_name(); }
  // Members that shared keys but sent no masked input (once the masked input phase is over).
  size_t dropped_after_sharing() const { return session_->dropped().size(); }

 private:
  SecureGroupShare() = default;

  std::unique_ptr<SecAggRound> session_;
  std::vector<Outgoing> outbox_;
  uint64_t round_ = 0;
  uint64_t task_id_ = 0;
  uint64_t model_version_ = 0;
  std::set<std::string> members_;
};

}  // namespace tributary
