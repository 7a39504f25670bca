// CertificateInfo: what a certificate says, in plain strings. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "tributary/result.h"

namespace tributary {

// What a certificate says, for printing (tributary-certs) and diagnostics.
struct CertificateInfo {
  std::string subject_cn;                 // "" when the subject has no CN
  std::vector<std::string> dns_names;     // SAN DNS entries
  std::vector<std::string> ip_addresses;  // SAN IP entries, printed ("127.0.0.1", "::1")
  std::vector<std::string> uris;          // SAN URI entries
  std::string not_before;                 // "2025-01-31 12:00:00 UTC"
  std::string not_after;
  bool is_ca = false;
};
// Describes the first certificate in `cert_pem`; InvalidArgument when it does not parse.
Result<CertificateInfo> DescribeCertificate(const std::string& cert_pem);

}  // namespace tributary
