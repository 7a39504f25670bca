// SecAggRound: the coordinator's side of one round attempt with secure aggregation, as phases with
// deadlines over the wire messages (protocol/secagg_messages.h): what RoundEngine runs instead of
// folding updates one by one when the run asks for secure aggregation (docs/privacy.md).
//
//   SecAggRound r(options, selected, now, input_deadline);   // queues SecAggStart for each
//   r.OnKeys(id, msg, now) / OnShares / OnMaskedInput / OnUnmaskResponse   (as messages arrive)
//   r.OnLeft(id, now); r.OnTick(now)                           (departures, deadlines)
//   r.TakeOutbox()                                             (rosters, inboxes, requests)
//   r.state(): kRunning, then kDone (mean() and total_weight()) or kFailed (failure())
//
// A phase ends when every client it waits for has answered or left, or at its deadline: each
// phase has `phase_timeout`, except the masked input, which waits until `input_deadline` (the
// clients train first). Too few clients at the end of any phase fails the attempt with a reason
// and reveals nothing (SecAggServer). The clients a phase still waited for at its deadline (and
// that had not left) are TakeSilent()'s (RoundEngine and AsyncEngine cool them down, as they do a
// client silent in a plaintext round). A message out of phase, from a client the phase does not
// wait for, or for another round is refused with FailedPrecondition naming it, and changes
// nothing. Not thread-safe: the round engine's strand.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "privacy/secagg/int_domain.h"
#include "privacy/secagg/secagg_server.h"
#include "protocol/messages.h"

namespace tributary {

class SecAggRound {
 public:
  struct Options {
    SecAggSession session;  // round, run id, vector_length = values + 1, modulus, k, t, ...
    IntDomainConfig domain;
    std::chrono::milliseconds phase_timeout{10'000};
    // Differential privacy on the clients (SecAggStartMsg's dp_* fields); 0: none.
    double dp_clip_norm = 0.0;
    double dp_noise_stddev = 0.0;
    uint64_t dp_noise_seed = 0;
    // false: keep only the integer sum (sum()), for a group whose sum the coordinator adds to
    // others before decoding (docs/tier.md); mean() stays empty.
    bool decode = true;
  };
  struct Outgoing {
    std::string client_id;
    Message message;
  };
  enum class State { kRunning, kDone, kFailed };

  // InvalidArgument when the domain does not fit (IntDomain) or does not match the session.
  static Result<std::unique_ptr<SecAggRound>> Start(Options options,
                                                    std::vector<std::string> selected,
                                                    TimePoint now, TimePoint input_deadline);

  Status OnKeys(const std::string& id, const SecAggKeysMsg& msg, TimePoint now);
  Status OnShares(const std::string& id, const SecAggSharesMsg& msg, TimePoint now);
  Status OnMaskedInput(const std::string& id, const SecAggMaskedInputMsg& msg, TimePoint now);
  Status OnUnmaskResponse(const std::string& id, const SecAggUnmaskResponseMsg& msg, TimePoint now);
  void OnLeft(const std::string& id, TimePoint now);
  // `id` will send no masked input (its task failed: TaskFailed) but is still connected: the
  // masked input phase does not wait for it (now, or when that phase starts), so it is one of the
  // dropouts whose masks the others' shares remove. Earlier phases still count its answers.
  void OnNoInput(const std::string& id, TimePoint now);
  void OnTick(TimePoint now);

  std::vector<Outgoing> TakeOutbox();
  std::optional<TimePoint> next_deadline() const;
  State state() const { return state_; }
  const Status& failure() const { return failure_; }
  // When kDone: the weighted mean of the survivors' updates, and their total weight.
  const std::vector<float>& mean() const { return mean_; }
  uint64_t total_weight() const { return total_weight_; }
  // When kDone: the survivors' inputs summed modulo 2^sum_bits (weight last).
  const std::vector<uint64_t>& sum() const { return sum_; }
  const IntDomain& domain() const { return domain_; }
  // Clients whose masked input was summed (when kDone).
  const std::vector<std::string>& survivors() const { return survivors_; }
  // Clients that shared their keys but sent no masked input (after the masked input phase): their
  // pairwise masks were removed through their neighbours' shares.
  const std::vector<std::string>& dropped() const { return dropped_; }
  // Clients that had not answered a phase when its deadline passed, and had not left, in the order
  // the phases ended (each at most once: a silent client is not asked again), with the phase;
  // moved out, so a second call returns only those silent since the first.
  struct Silent {
    std::string client_id;
    std::string phase;
  };
  std::vector<Silent> TakeSilent();
  // Bytes of secure aggregation's messages: masked inputs (up) and everything else, each way.
  uint64_t masked_bytes_up() const { return masked_bytes_up_; }
  uint64_t protocol_bytes_up() const { return protocol_bytes_up_; }
  uint64_t protocol_bytes_down() const { return protocol_bytes_down_; }
  const char* phase_name() const;
  const SecAggSession& session() const { return options_.session; }

 private:
  enum class Phase { kAdvertise, kShare, kMask, kUnmask, kOver };
  SecAggRound(Options options, IntDomain domain);
  Status Accept(const std::string& id, uint64_t round, Phase phase, const char* what);
  void Answered(const std::string& id, TimePoint now);
  void Advance(TimePoint now);
  void Fail(Status why);
  void Send(const std::string& id, Message m);

  Options options_;
  IntDomain domain_;
  SecAggServer server_;
  Phase phase_ = Phase::kAdvertise;
  State state_ = State::kRunning;
  Status failure_;
  std::set<std::string> waiting_;   // clients this phase still waits for
  std::set<std::string> no_input_;  // clients that will send no masked input (OnNoInput)
  TimePoint deadline_{};
  TimePoint input_deadline_{};
  std::vector<Outgoing> outbox_;
  std::vector<float> mean_;
  std::vector<uint64_t> sum_;
  uint64_t total_weight_ = 0;
  std::vector<std::string> survivors_, dropped_;
  std::vector<Silent> silent_;
  uint64_t masked_bytes_up_ = 0, protocol_bytes_up_ = 0, protocol_bytes_down_ = 0;
};

}  // namespace tributary
