// A client's secure-aggregation identity for tests: a certificate for `id` made by the test CA
// `ca` (crypto/cert_authority.h), its key, and that CA as the verifier of the peers' keys. Shared
// by the client runtime's tests and the whole-run tests that drive real ClientRuntimes.
#pragma once

#include <memory>
#include <string>

#include "client/secagg_task.h"
#include "crypto/cert_authority.h"
#include "crypto/signing.h"

namespace tributary::testing {

inline std::shared_ptr<const SecAggIdentity> MakeSecAggIdentity(const PemPair& ca,
                                                                const std::string& id) {
  auto identity = std::make_shared<SecAggIdentity>();
  const PemPair cert = *MakeClientCertificate(ca, id);
  identity->key = std::make_shared<const SigningKey>(*SigningKey::FromPem(cert.key_pem));
  identity->cert_pem = cert.cert_pem;
  identity->ca =
      std::make_shared<const CertificateVerifier>(*CertificateVerifier::FromPem(ca.cert_pem));
  return identity;
}

}  // namespace tributary::testing
