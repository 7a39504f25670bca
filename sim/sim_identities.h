// SimIdentities: the certificates virtual clients sign their secure aggregation keys with.
//
// A deployment's clients sign with their TLS keys and check each other against the run's CA
// (client/secagg_task.h, SecAggIdentity). The in-process simulator has no TLS, so it makes the
// same things in memory: one private CA for the run (crypto/cert_authority.h, ECDSA P-256), and
// for each virtual client, the first time it takes part, a client certificate that carries its id
// (Population::ClientId). Peers verify exactly as in deployment: a key signed by anyone else, or
// for another id, is refused.
//
// Thread-safe. A certificate costs a key generation and a signature (well under a millisecond);
// each client's is made once and kept.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "client/secagg_task.h"
#include "crypto/pem.h"

namespace tributary {

class SimIdentities {
 public:
  static Result<std::unique_ptr<SimIdentities>> Create();

  // The identity of `client_id` (made on first use); InvalidArgument for an id a certificate
  // cannot carry.
  Result<std::shared_ptr<const SecAggIdentity>> For(const std::string& client_id);

 private:
  SimIdentities(PemPair ca, std::shared_ptr<const CertificateVerifier> verifier);

  std::mutex mu_;
  const PemPair ca_;
  const std::shared_ptr<const CertificateVerifier> verifier_;
  std::map<std::string, std::shared_ptr<const SecAggIdentity>> issued_;
};

}  // namespace tributary
