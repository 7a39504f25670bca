#include "sim/sim_identities.h"

#include "crypto/cert_authority.h"

namespace tributary {

SimIdentities::SimIdentities(PemPair ca, std::shared_ptr<const CertificateVerifier> verifier)
    : ca_(std::move(ca)), verifier_(std::move(verifier)) {}

Result<std::unique_ptr<SimIdentities>> SimIdentities::Create() {
  TRIB_ASSIGN_OR_RETURN(PemPair ca, MakeCaCertificate("tributary-sim secure aggregation CA"));
  TRIB_ASSIGN_OR_RETURN(CertificateVerifier v,
                        CertificateVerifier::FromPem(ca.cert_pem, "the simulation's CA"));
  return std::unique_ptr<SimIdentities>(
      new SimIdentities(std::move(ca), std::make_shared<const CertificateVerifier>(std::move(v))));
}

Result<std::shared_ptr<const SecAggIdentity>> SimIdentities::For(const std::string& client_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = issued_.find(client_id); it != issued_.end()) return it->second;
  TRIB_ASSIGN_OR_RETURN(PemPair pair, MakeClientCertificate(ca_, client_id));
  TRIB_ASSIGN_OR_RETURN(SigningKey key, SigningKey::FromPem(pair.key_pem, client_id + "'s key"));
  auto id = std::make_shared<SecAggIdentity>();
  id->key = std::make_shared<const SigningKey>(std::move(key));
  id->cert_pem = std::move(pair.cert_pem);
  id->ca = verifier_;
  std::shared_ptr<const SecAggIdentity> out = std::move(id);
  issued_.emplace(client_id, out);
  return out;
}

}  // namespace tributary
