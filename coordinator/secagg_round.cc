#include "coordinator/secagg_round.h"

#include <fmt/format.h>

#include "core/log.h"
#include "privacy/secagg/secagg_start.h"
#include "privacy/secagg/secagg_wire.h"

namespace tributary {

Result<std::unique_ptr<SecAggRound>> SecAggRound::Start(Options options,
                                                        std::vector<std::string> selected,
                                                        TimePoint now, TimePoint input_deadline) {
  TRIB_ASSIGN_OR_RETURN(IntDomain domain, IntDomain::Create(options.domain));
  if (options.session.modulus_mask != domain.modulus_mask())
    return Status::InvalidArgument("secure aggregation: the session's modulus is not the domain's");
  if (options.phase_timeout.count() <= 0)
    return Status::InvalidArgument("secure aggregation: the phase timeout must be > 0");
  std::unique_ptr<SecAggRound> r(new SecAggRound(std::move(options), domain));
  // The one mapping of the start message (privacy/secagg/secagg_start.h), which the clients
  // read back with FromWire.
  TRIB_ASSIGN_OR_RETURN(
      const SecAggStartMsg start,
      ToWire(SecAggStart{r->options_.session, r->options_.domain,
                         DpOnClients{r->options_.dp_clip_norm, r->options_.dp_noise_stddev,
                                     r->options_.dp_noise_seed}}));
  for (const std::string& id : selected) {
    r->Send(id, start);
    r->waiting_.insert(id);
  }
  r->deadline_ = now + r->options_.phase_timeout;
  r->input_deadline_ = input_deadline;
  return r;
}

SecAggRound::SecAggRound(Options options, IntDomain domain)
    : options_(std::move(options)), domain_(domain), server_(options_.session) {}

const char* SecAggRound::phase_name() const {
  static const char* kNames[] = {"advertise keys", "share keys", "masked input", "unmask", "over"};
  return kNames[static_cast<int>(phase_)];
}

void SecAggRound::Send(const std::string& id, Message m) {
  std::visit(
      [&](const auto& msg) {
        if constexpr (requires { WireBytes(msg); }) protocol_bytes_down_ += WireBytes(msg);
      },
      m);
  outbox_.push_back({id, std::move(m)});
}

Status SecAggRound::Accept(const std::string& id, uint64_t round, Phase phase, const char* what) {
  if (round != options_.session.round)
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: {} from '{}' for round {}; this is round {}", what, id,
                    round, options_.session.round));
  if (phase_ != phase)
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: {} from '{}' arrived in phase '{}'", what, id, phase_name()));
  if (!waiting_.count(id))
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: {} from '{}', which this phase does not wait for (not selected, "
        "dropped earlier, or a second message)",
        what, id));
  return Status::Ok();
}

Status SecAggRound::OnKeys(const std::string& id, const SecAggKeysMsg& msg, TimePoint now) {
  TRIB_RETURN_IF_ERROR(Accept(id, msg.round, Phase::kAdvertise, "keys"));
  if (msg.client_id != id)
    return Status::PermissionDenied(fmt::format(
        "secure aggregation: '{}' advertised keys in the name of '{}'", id, msg.client_id));
  TRIB_ASSIGN_OR_RETURN(SecAggKeys keys, FromWire(msg));
  TRIB_RETURN_IF_ERROR(server_.AddKeys(std::move(keys)));
  protocol_bytes_up_ += WireBytes(msg);
  Answered(id, now);
  return Status::Ok();
}

Status SecAggRound::OnShares(const std::string& id, const SecAggSharesMsg& msg, TimePoint now) {
  TRIB_RETURN_IF_ERROR(Accept(id, msg.round, Phase::kShare, "shares"));
  TRIB_ASSIGN_OR_RETURN(SecAggShares shares, FromWire(msg, id));
  TRIB_RETURN_IF_ERROR(server_.AddShares(std::move(shares)));
  protocol_bytes_up_ += WireBytes(msg);
  Answered(id, now);
  return Status::Ok();
}

Status SecAggRound::OnMaskedInput(const std::string& id, const SecAggMaskedInputMsg& msg,
                                  TimePoint now) {
  TRIB_RETURN_IF_ERROR(Accept(id, msg.round, Phase::kMask, "a masked input"));
  TRIB_ASSIGN_OR_RETURN(SecAggMaskedInput input, FromWire(msg, id, domain_.sum_bits()));
  TRIB_RETURN_IF_ERROR(server_.AddMaskedInput(std::move(input)));
  masked_bytes_up_ += WireBytes(msg);
  Answered(id, now);
  return Status::Ok();
}

Status SecAggRound::OnUnmaskResponse(const std::string& id, const SecAggUnmaskResponseMsg& msg,
                                     TimePoint now) {
  TRIB_RETURN_IF_ERROR(Accept(id, msg.round, Phase::kUnmask, "an unmask response"));
  TRIB_ASSIGN_OR_RETURN(SecAggUnmaskResponse response, FromWire(msg, id));
  TRIB_RETURN_IF_ERROR(server_.AddUnmaskResponse(std::move(response)));
  protocol_bytes_up_ += WireBytes(msg);
  Answered(id, now);
  return Status::Ok();
}

void SecAggRound::Answered(const std::string& id, TimePoint now) {
  waiting_.erase(id);
  if (waiting_.empty()) Advance(now);
}

void SecAggRound::OnLeft(const std::string& id, TimePoint now) {
  if (state_ == State::kRunning && waiting_.erase(id) && waiting_.empty()) Advance(now);
}

void SecAggRound::OnNoInput(const std::string& id, TimePoint now) {
  if (state_ != State::kRunning || phase_ > Phase::kMask) return;
  no_input_.insert(id);
  if (phase_ == Phase::kMask && waiting_.erase(id) && waiting_.empty()) Advance(now);
}

void SecAggRound::OnTick(TimePoint now) {
  if (state_ == State::kRunning && now >= deadline_) Advance(now);
}

std::optional<TimePoint> SecAggRound::next_deadline() const {
  if (state_ != State::kRunning) return std::nullopt;
  return deadline_;
}

std::vector<SecAggRound::Silent> SecAggRound::TakeSilent() {
  std::vector<Silent> out;
  out.swap(silent_);
  return out;
}

std::vector<SecAggRound::Outgoing> SecAggRound::TakeOutbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  return out;
}

void SecAggRound::Fail(Status why) {
  state_ = State::kFailed;
  phase_ = Phase::kOver;
  failure_ = std::move(why);
  waiting_.clear();
}

void SecAggRound::Advance(TimePoint now) {
  const uint64_t round = options_.session.round;
  // Those the phase still waits for did not answer by its deadline (the departed left waiting_).
  for (const std::string& id : waiting_) silent_.push_back({id, phase_name()});
  waiting_.clear();
  switch (phase_) {
    case Phase::kAdvertise: {
      Result<SecAggRoster> roster = server_.CloseAdvertise();
      if (!roster.ok()) return Fail(roster.status());
      for (size_t i = 0; i < roster->clients.size(); ++i) {
        const std::string& id = roster->clients[i].client_id;
        Send(id, RosterFor(*roster, server_.graph(), i, round));
        waiting_.insert(id);
      }
      phase_ = Phase::kShare;
      deadline_ = now + options_.phase_timeout;
      return;
    }
    case Phase::kShare: {
      Result<std::map<std::string, SecAggInbox>> inboxes = server_.CloseShares();
      if (!inboxes.ok()) return Fail(inboxes.status());
      for (auto& [id, inbox] : *inboxes) {
        if (no_input_.count(id)) continue;  // its task failed: no masked input will come
        Send(id, ToWire(inbox, round));
        waiting_.insert(id);
      }
      phase_ = Phase::kMask;
      // The clients train before they mask: this phase lasts until the round's input deadline.
      deadline_ = std::max(input_deadline_, now + options_.phase_timeout);
      if (waiting_.empty()) Advance(now);  // every task failed: the phase has nobody to wait for
      return;
    }
    case Phase::kMask: {
      Result<SecAggUnmaskRequest> request = server_.CloseMaskedInput();
      if (!request.ok()) return Fail(request.status());
      const SecAggUnmaskRequestMsg wire = ToWire(*request, round);
      for (const std::string& id : request->survivors) {
        Send(id, wire);
        waiting_.insert(id);
      }
      survivors_ = request->survivors;
      dropped_ = request->dropped;
      phase_ = Phase::kUnmask;
      deadline_ = now + options_.phase_timeout;
      return;
    }
    case Phase::kUnmask: {
      Result<std::vector<uint64_t>> sum = server_.Finish();
      if (!sum.ok()) return Fail(sum.status());
      total_weight_ = sum->back() & domain_.modulus_mask();
      if (options_.decode) {
        Result<std::vector<float>> mean = domain_.Decode(*sum);
        if (!mean.ok()) return Fail(mean.status());
        mean_ = std::move(*mean);
      }
      sum_ = std::move(*sum);
      phase_ = Phase::kOver;
      state_ = State::kDone;
      return;
    }
    case Phase::kOver:
      return;
  }
}

}  // namespace tributary
