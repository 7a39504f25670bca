// SecAggClient: one client's side of one round of secure aggregation (secagg_messages.h has the
// phases). Each call is one phase, in order; a call out of order is FailedPrecondition.
//
//   SecAggClient c(session, "edge-1", &signing_key, cert_pem, &ca);
//   SecAggKeys keys = *c.AdvertiseKeys();
//   SecAggShares shares = *c.ShareKeys(roster);        // verifies every neighbour's signature
//   SecAggMaskedInput y = *c.MaskInput(inbox, input);  // input: IntDomain::Encode's integers
//   SecAggUnmaskResponse r = *c.Unmask(request);       // at most one, never both kinds per peer
//
// What the client refuses, with PermissionDenied naming the client concerned (the round aborts):
// a roster whose entry for this client is not the keys it advertised, or that carries keys a
// neighbour did not sign with a certificate of the run's CA (a coordinator substituting keys);
// shares that do not open (changed or misdirected). With FailedPrecondition: fewer than
// `threshold` neighbours left in any phase, and an unmask request that names a client both
// survivor and dropped, names this client dropped, or names clients that never shared keys.
// Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crypto/signing.h"
#include "crypto/x25519.h"
#include "privacy/secagg/neighbour_graph.h"
#include "privacy/secagg/secagg_messages.h"
#include "privacy/secagg/secagg_session.h"

namespace tributary {

class SecAggClient {
 public:
  SecAggClient(SecAggSession session, std::string client_id, const SigningKey* signing_key,
               std::string cert_pem, const CertificateVerifier* ca);

  Result<SecAggKeys> AdvertiseKeys();
  Result<SecAggShares> ShareKeys(const SecAggRoster& roster);
  Result<SecAggMaskedInput> MaskInput(const SecAggInbox& inbox, std::span<const uint64_t> input);
  Result<SecAggUnmaskResponse> Unmask(const SecAggUnmaskRequest& request);

 private:
  enum class Phase { kAdvertise, kShare, kMask, kUnmask, kDone };
  Status Expect(Phase phase, const char* call) const;

  SecAggSession session_;
  std::string id_;
  const SigningKey* signing_key_;
  std::string cert_pem_;
  const CertificateVerifier* ca_;
  Phase phase_ = Phase::kAdvertise;

  X25519KeyPair enc_, mask_;
  Key32 self_seed_{};
  SecAggKeys advertised_;
  SecAggRoster roster_;
  size_t self_index_ = 0;
  std::optional<NeighbourGraph> graph_;
  size_t threshold_ = 0;
  // The shares neighbours gave this client, by owner.
  std::map<std::string, std::pair<ShamirShare, ShamirShare>> held_;
  std::vector<std::string> u2_;
};

}  // namespace tributary
