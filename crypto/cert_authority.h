// Certificate provisioning: a private CA that issues server and client certificates for mutual TLS.
//
// Keys are ECDSA P-256; certificates are X.509 v3, SHA-256 signed, with random 127-bit serials.
//   CA:     CN=<name>; basicConstraints critical CA:TRUE; keyUsage critical keyCertSign, cRLSign.
//   server: CN=<first name>; SAN DNS + IP entries; EKU serverAuth; keyUsage digitalSignature.
//   client: CN=<id>; SAN URI tributary://client/<id>; EKU clientAuth; keyUsage digitalSignature.
//   aggregator: CN=<id>; SAN URI tributary://aggregator/<id> + DNS and IP entries; EKU serverAuth
//           and clientAuth (it serves clients and is a client of the coordinator).
// Leaf certificates carry basicConstraints critical CA:FALSE and both key identifiers.
//
// Errors: InvalidArgument for bad names, ids, addresses, options, or a CA pair that does not parse,
// does not match, or is not a CA. Thread safety: all functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crypto/cert_info.h"
#include "crypto/pem.h"
#include "tributary/result.h"

namespace tributary {

struct CertOptions {
  // Lifetime in days, 1..36500: notAfter = notBefore + valid_days.
  int64_t valid_days = 365;
  // notBefore = now + not_before_offset_s, within +-100 years. The default backdates five minutes
  // to absorb clock skew; a large negative offset with a small valid_days makes an expired
  // certificate (tests).
  int64_t not_before_offset_s = -300;
};

// A self-signed CA. `common_name` is 1..64 printable ASCII characters.
Result<PemPair> MakeCaCertificate(const std::string& common_name, const CertOptions& options = {});

// A server certificate signed by `ca`, valid for every DNS name and IP address given (at least one
// in total). DNS names are host names ("coord.example.org", "localhost", "*.example.org");
// addresses are IPv4 or IPv6 literals.
Result<PemPair> MakeServerCertificate(const PemPair& ca, const std::vector<std::string>& dns_names,
                                      const std::vector<std::string>& ip_addresses,
                                      const CertOptions& options = {});

// A client certificate signed by `ca` that carries `client_id` (see client_id.h for the syntax;
// anything else is InvalidArgument).
Result<PemPair> MakeClientCertificate(const PemPair& ca, const std::string& client_id,
                                      const CertOptions& options = {});

// An aggregator's certificate (the aggregation tier, client_id.h): valid for every DNS name and IP
// address given (at least one: its clients connect to it), and carrying `aggregator_id` (the
// client id syntax) for the coordinator it connects to.
Result<PemPair> MakeAggregatorCertificate(const PemPair& ca, const std::string& aggregator_id,
                                          const std::vector<std::string>& dns_names,
                                          const std::vector<std::string>& ip_addresses,
                                          const CertOptions& options = {});

}  // namespace tributary
