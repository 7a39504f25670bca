#include "privacy/secagg/secagg_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

#include "privacy/secagg/masking.h"
#include "privacy/secagg/shamir.h"

namespace tributary {
namespace {

const char* PhaseName(int p) {
  static const char* kNames[] = {"advertise keys", "share keys", "masked input",
                                 "unmask",         "done",       "failed"};
  return kNames[p];
}

}  // namespace

SecAggServer::SecAggServer(SecAggSession session) : session_(std::move(session)) {}

Status SecAggServer::Expect(Phase phase, const std::string& what, const std::string& from) const {
  if (phase_ == phase) return Status::Ok();
  return Status::FailedPrecondition(fmt::format(
      "secure aggregation: {} from '{}' arrived in phase '{}' of round {}; expected in '{}'", what,
      from, PhaseName(static_cast<int>(phase_)), session_.round,
      PhaseName(static_cast<int>(phase))));
}

Status SecAggServer::Fail(Status why) {
  phase_ = Phase::kFailed;
  return why;
}

size_t SecAggServer::IndexOf(const std::string& id) const {
  auto it =
      std::lower_bound(roster_.clients.begin(), roster_.clients.end(), id,
                       [](const SecAggKeys& k, const std::string& v) { return k.client_id < v; });
  return static_cast<size_t>(it - roster_.clients.begin());
}

Status SecAggServer::AddKeys(SecAggKeys keys) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kAdvertise, "keys", keys.client_id));
  if (keys_.count(keys.client_id))
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: '{}' advertised keys twice", keys.client_id));
  std::string id = keys.client_id;
  keys_.emplace(std::move(id), std::move(keys));
  return Status::Ok();
}

Result<SecAggRoster> SecAggServer::CloseAdvertise() {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kAdvertise, "the end of a phase", "the round engine"));
  const size_t n = keys_.size();
  const size_t t = session_.ThresholdFor(n);
  const size_t need = std::max(session_.min_clients, t + 1);
  if (n < need)
    return Fail(Status::FailedPrecondition(fmt::format(
        "secure aggregation: {} clients advertised keys; at least {} are needed (threshold {}, "
        "secagg.min_clients {})",
        n, need, t, session_.min_clients)));
  for (auto& [id, k] : keys_) roster_.clients.push_back(k);
  TRIB_ASSIGN_OR_RETURN(Key32 seed, session_.GraphSeed(roster_));
  graph_.emplace(n, session_.DegreeFor(n), seed);
  threshold_ = t;
  phase_ = Phase::kShare;
  return roster_;
}

Status SecAggServer::AddShares(SecAggShares shares) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kShare, "shares", shares.from));
  const size_t i = IndexOf(shares.from);
  if (i == roster_.clients.size() || roster_.clients[i].client_id != shares.from)
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: shares from '{}', which did not advertise keys", shares.from));
  if (shares_.count(shares.from))
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: '{}' sent its shares twice", shares.from));
  // One share for each neighbour, each from the sender.
  std::set<std::string> to;
  for (const SecAggSealedShare& s : shares.shares) {
    const size_t j = IndexOf(s.to);
    if (s.from != shares.from || j == roster_.clients.size() ||
        roster_.clients[j].client_id != s.to || !graph_->Joined(i, j) || !to.insert(s.to).second)
      return Status::FailedPrecondition(fmt::format(
          "secure aggregation: '{}' sent a share for '{}', which is not one of its neighbours",
          shares.from, s.to));
  }
  if (to.size() != graph_->of(i).size())
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: '{}' sent {} shares for its {} neighbours", shares.from,
                    to.size(), graph_->of(i).size()));
  std::string from = shares.from;
  shares_.emplace(std::move(from), std::move(shares));
  return Status::Ok();
}

Result<std::map<std::string, SecAggInbox>> SecAggServer::CloseShares() {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kShare, "the end of a phase", "the round engine"));
  const size_t need = std::max(session_.min_clients, threshold_ + 1);
  if (shares_.size() < need)
    return Fail(Status::FailedPrecondition(
        fmt::format("secure aggregation: {} clients shared keys; at least {} are needed",
                    shares_.size(), need)));
  std::vector<std::string> senders;
  for (const auto& [id, s] : shares_) senders.push_back(id);
  std::map<std::string, SecAggInbox> inboxes;
  for (const std::string& id : senders) inboxes[id].senders = senders;
  for (auto& [from, s] : shares_)
    for (SecAggSealedShare& share : s.shares)
      if (inboxes.count(share.to)) inboxes[share.to].shares.push_back(std::move(share));
  phase_ = Phase::kMask;
  return inboxes;
}

Status SecAggServer::AddMaskedInput(SecAggMaskedInput input) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kMask, "a masked input", input.from));
  if (!shares_.count(input.from))
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: a masked input from '{}', which did not share keys", input.from));
  if (masked_.count(input.from))
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: '{}' sent its masked input twice", input.from));
  if (input.masked.size() != session_.vector_length)
    return Status::InvalidArgument(fmt::format(
        "secure aggregation: the masked input of '{}' has {} integers; the round has {}",
        input.from, input.masked.size(), session_.vector_length));
  for (uint64_t v : input.masked)
    if (v & ~session_.modulus_mask)
      return Status::InvalidArgument(fmt::format(
          "secure aggregation: the masked input of '{}' holds a value beyond the modulus",
          input.from));
  if (sum_.empty()) sum_.assign(session_.vector_length, 0);
  const uint64_t mod = session_.modulus_mask;
  for (size_t i = 0; i < sum_.size(); ++i) sum_[i] = (sum_[i] + input.masked[i]) & mod;
  masked_.insert(input.from);
  return Status::Ok();
}

Result<SecAggUnmaskRequest> SecAggServer::CloseMaskedInput() {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kMask, "the end of a phase", "the round engine"));
  const size_t need = std::max(session_.min_clients, threshold_ + 1);
  if (masked_.size() < need)
    return Fail(Status::FailedPrecondition(
        fmt::format("secure aggregation: {} clients sent masked inputs; at least {} are needed",
                    masked_.size(), need)));
  for (const auto& [id, s] : shares_)
    (masked_.count(id) ? request_.survivors : request_.dropped).push_back(id);
  phase_ = Phase::kUnmask;
  return request_;
}

Status SecAggServer::AddUnmaskResponse(SecAggUnmaskResponse response) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kUnmask, "an unmask response", response.from));
  if (!masked_.count(response.from))
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: an unmask response from '{}', which is not a survivor",
                    response.from));
  if (answered_.count(response.from))
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: '{}' answered the unmask request twice", response.from));
  const size_t holder = IndexOf(response.from);
  // Check the whole response before keeping any of it: what Finish's interpolation would trip
  // on (a second share of one owner, a share of the wrong length or beyond the field) is refused
  // here, naming its sender, rather than failing the whole session there.
  std::set<std::string_view> owners;
  for (const SecAggRevealedShare& r : response.shares) {
    if (!owners.insert(r.owner).second)
      return Status::FailedPrecondition(fmt::format(
          "secure aggregation: '{}' revealed two shares of '{}'", response.from, r.owner));
    if (!CheckShamirShare(r.share, 32).ok())  // the secrets are 32-byte keys
      return Status::InvalidArgument(fmt::format(
          "secure aggregation: '{}' revealed a malformed share of '{}' ({} field elements, {} "
          "expected, each below 2^61 - 1)",
          response.from, r.owner, r.share.y.size(), ShamirLimbs(32)));
    const bool survivor = masked_.count(r.owner) > 0;
    const bool dropped = !survivor && shares_.count(r.owner) > 0;
    const ShareKind want = survivor ? ShareKind::kSelfMaskSeed : ShareKind::kMaskKey;
    if ((!survivor && !dropped) || r.kind != want || !graph_->Joined(holder, IndexOf(r.owner)) ||
        r.share.x != holder + 1)
      return Status::FailedPrecondition(
          fmt::format("secure aggregation: '{}' revealed a share of '{}' that was not asked for",
                      response.from, r.owner));
  }
  answered_.insert(response.from);
  for (SecAggRevealedShare& r : response.shares) {
    kinds_[r.owner].insert(r.kind);
    revealed_[r.owner].push_back(std::move(r.share));
  }
  return Status::Ok();
}

Result<std::vector<uint64_t>> SecAggServer::Finish() {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kUnmask, "the end of a phase", "the round engine"));
  const uint64_t mod = session_.modulus_mask;
  for (const auto& [owner, kinds] : kinds_)
    if (kinds.size() > 1)
      return Fail(Status::Internal(fmt::format(
          "secure aggregation: both secrets of '{}' were revealed; refusing to use them", owner)));
  auto secret_of = [&](const std::string& owner, const char* what) -> Result<Key32> {
    const std::vector<ShamirShare>& got = revealed_[owner];
    if (got.size() < threshold_)
      return Status::FailedPrecondition(
          fmt::format("secure aggregation: only {} shares of the {} of '{}' arrived; {} are needed",
                      got.size(), what, owner, threshold_));
    TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ShamirCombine(got, threshold_, 32));
    Key32 k;
    std::copy(bytes.begin(), bytes.end(), k.begin());
    return k;
  };
  std::vector<uint64_t> sum = std::move(sum_);
  sum.resize(session_.vector_length, 0);
  // Self masks of the survivors.
  for (const std::string& v : request_.survivors) {
    Result<Key32> seed = secret_of(v, "self-mask seed");
    if (!seed.ok()) return Fail(seed.status());
    ApplyMask(sum, *seed, /*subtract=*/true, mod);
  }
  // Pairwise masks that survivors share with clients that dropped after sharing keys.
  for (const std::string& w : request_.dropped) {
    Result<Key32> key = secret_of(w, "mask key");
    if (!key.ok()) return Fail(key.status());
    TRIB_ASSIGN_OR_RETURN(X25519KeyPair dropped, X25519KeyPair::FromPrivate(*key));
    if (dropped.public_key != keys_[w].mask_public)
      return Fail(Status::Corruption(fmt::format(
          "secure aggregation: the mask key of '{}' rebuilt from its shares does not match the "
          "key it advertised: a share was changed",
          w)));
    const size_t wi = IndexOf(w);
    for (uint32_t j : graph_->of(wi)) {
      const SecAggKeys& u = roster_.clients[j];
      if (!masked_.count(u.client_id)) continue;
      TRIB_ASSIGN_OR_RETURN(Key32 secret, dropped.Agree(u.mask_public));
      TRIB_ASSIGN_OR_RETURN(Key32 seed, session_.PairwiseSeed(secret, u.client_id, w));
      // u added this mask when it sorts first, subtracted it otherwise: undo that.
      ApplyMask(sum, seed, /*subtract=*/u.client_id < w, mod);
    }
  }
  phase_ = Phase::kDone;
  return sum;
}

}  // namespace tributary
