#include "privacy/secagg/secagg_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "crypto/aead.h"
#include "crypto/secure_random.h"
#include "privacy/secagg/masking.h"
#include "privacy/secagg/shamir.h"

namespace tributary {

SecAggClient::SecAggClient(SecAggSession session, std::string client_id,
                           const SigningKey* signing_key, std::string cert_pem,
                           const CertificateVerifier* ca)
    : session_(std::move(session)),
      id_(std::move(client_id)),
      signing_key_(signing_key),
      cert_pem_(std::move(cert_pem)),
      ca_(ca) {}

Status SecAggClient::Expect(Phase phase, const char* call) const {
  if (phase_ == phase) return Status::Ok();
  return Status::FailedPrecondition(
      fmt::format("secure aggregation: {} called out of order (round {})", call, session_.round));
}

Result<SecAggKeys> SecAggClient::AdvertiseKeys() {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kAdvertise, "AdvertiseKeys"));
  TRIB_ASSIGN_OR_RETURN(enc_, X25519KeyPair::Generate());
  TRIB_ASSIGN_OR_RETURN(mask_, X25519KeyPair::Generate());
  TRIB_RETURN_IF_ERROR(SecureRandomBytes(self_seed_));
  SecAggKeys k;
  k.client_id = id_;
  k.enc_public = enc_.public_key;
  k.mask_public = mask_.public_key;
  k.cert_pem = cert_pem_;
  TRIB_ASSIGN_OR_RETURN(k.signature, signing_key_->Sign(session_.KeysMessage(k)));
  advertised_ = k;
  phase_ = Phase::kShare;
  return k;
}

Result<SecAggShares> SecAggClient::ShareKeys(const SecAggRoster& roster) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kShare, "ShareKeys"));
  phase_ = Phase::kDone;  // any failure below ends this client's round
  const size_t n = roster.clients.size();
  for (size_t i = 1; i < n; ++i)
    if (!(roster.clients[i - 1].client_id < roster.clients[i].client_id))
      return Status::InvalidArgument("secure aggregation: the roster is not sorted by client id");
  auto self = std::find_if(roster.clients.begin(), roster.clients.end(),
                           [&](const SecAggKeys& k) { return k.client_id == id_; });
  if (self == roster.clients.end())
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: the roster of round {} leaves out this client ({})",
                    session_.round, id_));
  if (!(*self == advertised_))
    return Status::PermissionDenied(fmt::format(
        "secure aggregation aborted: the coordinator relayed keys for '{}' (this client) that "
        "are not the keys it advertised",
        id_));
  self_index_ = static_cast<size_t>(self - roster.clients.begin());
  TRIB_ASSIGN_OR_RETURN(Key32 seed, session_.GraphSeed(roster));
  graph_.emplace(n, session_.DegreeFor(n), seed);
  threshold_ = session_.ThresholdFor(n);
  const std::vector<uint32_t>& mine = graph_->of(self_index_);
  if (mine.size() < threshold_)
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: {} has {} neighbours in a roster of {}; the threshold is {}", id_,
        mine.size(), n, threshold_));
  // Every neighbour's keys must be signed by that neighbour, with a certificate of the run's CA.
  for (uint32_t j : mine) {
    const SecAggKeys& k = roster.clients[j];
    Result<std::string> signer =
        ca_->VerifySignature(k.cert_pem, session_.KeysMessage(k), k.signature);
    if (!signer.ok())
      return Status::PermissionDenied(fmt::format(
          "secure aggregation aborted: the coordinator relayed keys for '{}' that '{}' did not "
          "sign: {}",
          k.client_id, k.client_id, signer.status().message()));
    if (*signer != k.client_id)
      return Status::PermissionDenied(fmt::format(
          "secure aggregation aborted: the coordinator relayed keys for '{}' signed by '{}'",
          k.client_id, *signer));
  }
  // Shares of both secrets for each neighbour, at its roster position + 1.
  std::vector<uint32_t> xs;
  for (uint32_t j : mine) xs.push_back(j + 1);
  TRIB_ASSIGN_OR_RETURN(std::vector<ShamirShare> seed_shares,
                        ShamirSplit(self_seed_, threshold_, xs));
  TRIB_ASSIGN_OR_RETURN(std::vector<ShamirShare> key_shares,
                        ShamirSplit(mask_.private_key, threshold_, xs));
  SecAggShares out;
  out.from = id_;
  for (size_t s = 0; s < mine.size(); ++s) {
    const SecAggKeys& to = roster.clients[mine[s]];
    TRIB_ASSIGN_OR_RETURN(Key32 secret, enc_.Agree(to.enc_public));
    TRIB_ASSIGN_OR_RETURN(Key32 key, session_.ShareKey(secret, id_, to.client_id));
    TRIB_ASSIGN_OR_RETURN(std::vector<uint8_t> sealed,
                          AeadSeal(key, session_.ShareContext(id_, to.client_id),
                                   EncodeSharePair(seed_shares[s], key_shares[s])));
    out.shares.push_back({id_, to.client_id, std::move(sealed)});
  }
  roster_ = roster;
  phase_ = Phase::kMask;
  return out;
}

Result<SecAggMaskedInput> SecAggClient::MaskInput(const SecAggInbox& inbox,
                                                  std::span<const uint64_t> input) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kMask, "MaskInput"));
  phase_ = Phase::kDone;
  if (input.size() != session_.vector_length)
    return Status::InvalidArgument(
        fmt::format("secure aggregation: the input has {} integers; the round expects {}",
                    input.size(), session_.vector_length));
  std::set<std::string> u2(inbox.senders.begin(), inbox.senders.end());
  if (!u2.count(id_))
    return Status::FailedPrecondition(
        fmt::format("secure aggregation: {} is not among the clients that shared keys", id_));
  // Open the shares sealed for this client: one per neighbour in U2, each from that neighbour.
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < roster_.clients.size(); ++i) index[roster_.clients[i].client_id] = i;
  for (const SecAggSealedShare& s : inbox.shares) {
    auto it = index.find(s.from);
    if (s.to != id_ || it == index.end() || !graph_->Joined(self_index_, it->second) ||
        !u2.count(s.from) || held_.count(s.from))
      return Status::PermissionDenied(fmt::format(
          "secure aggregation aborted: the coordinator relayed a share from '{}' to '{}' that "
          "this client ({}) cannot hold",
          s.from, s.to, id_));
    const SecAggKeys& from = roster_.clients[it->second];
    TRIB_ASSIGN_OR_RETURN(Key32 secret, enc_.Agree(from.enc_public));
    TRIB_ASSIGN_OR_RETURN(Key32 key, session_.ShareKey(secret, s.from, id_));
    Result<std::vector<uint8_t>> plain =
        AeadOpen(key, session_.ShareContext(s.from, id_), s.sealed);
    if (!plain.ok())
      return Status::PermissionDenied(
          fmt::format("secure aggregation aborted: the share from '{}' does not open: {}", s.from,
                      plain.status().message()));
    ShamirShare seed_share, key_share;
    TRIB_RETURN_IF_ERROR(DecodeSharePair(*plain, &seed_share, &key_share));
    if (seed_share.x != self_index_ + 1)
      return Status::PermissionDenied(fmt::format(
          "secure aggregation aborted: the share from '{}' is for another holder", s.from));
    held_[s.from] = {std::move(seed_share), std::move(key_share)};
  }
  // Neighbours in U2 must all have sent their shares to this client.
  size_t live = 0;
  for (uint32_t j : graph_->of(self_index_)) {
    const std::string& v = roster_.clients[j].client_id;
    if (!u2.count(v)) continue;
    if (!held_.count(v))
      return Status::PermissionDenied(fmt::format(
          "secure aggregation aborted: '{}' shared keys but its share for {} was withheld", v,
          id_));
    ++live;
  }
  if (live < threshold_)
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: only {} of {}'s neighbours shared keys; the threshold is {}", live,
        id_, threshold_));
  u2_.assign(u2.begin(), u2.end());
  // y = x + PRG(b) + sum over neighbours v in U2 of +-PRG(s_uv): + when this id sorts first.
  SecAggMaskedInput out;
  out.from = id_;
  out.masked.assign(input.begin(), input.end());
  const uint64_t mod = session_.modulus_mask;
  for (uint64_t& v : out.masked) v &= mod;
  ApplyMask(out.masked, self_seed_, false, mod);
  for (uint32_t j : graph_->of(self_index_)) {
    const SecAggKeys& v = roster_.clients[j];
    if (!u2.count(v.client_id)) continue;
    TRIB_ASSIGN_OR_RETURN(Key32 secret, mask_.Agree(v.mask_public));
    TRIB_ASSIGN_OR_RETURN(Key32 seed, session_.PairwiseSeed(secret, id_, v.client_id));
    ApplyMask(out.masked, seed, /*subtract=*/id_ > v.client_id, mod);
  }
  phase_ = Phase::kUnmask;
  return out;
}

Result<SecAggUnmaskResponse> SecAggClient::Unmask(const SecAggUnmaskRequest& request) {
  TRIB_RETURN_IF_ERROR(Expect(Phase::kUnmask, "Unmask"));
  phase_ = Phase::kDone;  // one answer per round, whatever happens
  std::set<std::string> survivors(request.survivors.begin(), request.survivors.end());
  std::set<std::string> dropped(request.dropped.begin(), request.dropped.end());
  const std::set<std::string> u2(u2_.begin(), u2_.end());
  for (const std::string& d : dropped)
    if (survivors.count(d))
      return Status::FailedPrecondition(fmt::format(
          "secure aggregation: refusing to unmask: '{}' is named both survivor and dropped", d));
  if (!survivors.count(id_))
    return Status::FailedPrecondition(fmt::format(
        "secure aggregation: refusing to unmask: this client ({}) is named dropped", id_));
  for (const std::set<std::string>* list : {&survivors, &dropped})
    for (const std::string& c : *list)
      if (!u2.count(c))
        return Status::FailedPrecondition(fmt::format(
            "secure aggregation: refusing to unmask: '{}' did not share keys this round", c));
  if (survivors.size() + dropped.size() != u2.size())
    return Status::FailedPrecondition(
        "secure aggregation: refusing to unmask: the request does not account for every client "
        "that shared keys");
  SecAggUnmaskResponse out;
  out.from = id_;
  for (const auto& [owner, pair] : held_) {
    if (survivors.count(owner))
      out.shares.push_back({owner, ShareKind::kSelfMaskSeed, pair.first});
    else if (dropped.count(owner))
      out.shares.push_back({owner, ShareKind::kMaskKey, pair.second});
  }
  return out;
}

}  // namespace tributary
