// Internal OpenSSL helpers for crypto/: owning pointers, error text, and PEM parsing that names its
// source. Not part of the public API; other components use cert_authority.h and tls_context.h.
//
// Thread safety: all functions are thread-safe (they touch only their arguments and OpenSSL's
// thread-local error queue).
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "crypto/client_id.h"
#include "tributary/result.h"

namespace tributary::crypto_internal {

template <auto Fn>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Fn(p);
  }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using X509ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES_free>>;

// Drains OpenSSL's thread-local error queue into one line ("" when empty). Call it right after a
// failed OpenSSL call so the text belongs to that failure.
std::string DrainOpenSslErrors();

// Status `code` with "<what>: <openssl errors>" (just <what> when the queue is empty).
Status OpenSslStatus(StatusCode code, std::string_view what);

// Reads a PEM file (capped at kMaxPemFileBytes). Errors name the file.
inline constexpr uint64_t kMaxPemFileBytes = 1 << 20;
Result<std::string> ReadPemFile(const std::string& path);

// Parses every certificate in `pem` (at least one). `source` names the file or buffer in errors.
Result<std::vector<X509Ptr>> ParseCertificates(std::string_view pem, std::string_view source);
// Parses exactly the first certificate in `pem`.
Result<X509Ptr> ParseCertificate(std::string_view pem, std::string_view source);
// Parses an unencrypted private key (PKCS#8 or traditional). Encrypted keys are rejected.
Result<EvpPkeyPtr> ParsePrivateKey(std::string_view pem, std::string_view source);

// An ASN.1 string's bytes (a CN, a SAN entry) as they are; no charset conversion.
std::string Asn1ToString(const ASN1_STRING* s);

// PEM encodings of a certificate and an (unencrypted, PKCS#8) private key.
Result<std::string> CertificateToPem(X509* cert);
Result<std::string> PrivateKeyToPem(EVP_PKEY* key);

// OK when `key` is the private key for `cert`; otherwise InvalidArgument naming both sources.
Status CheckKeyMatchesCert(X509* cert, std::string_view cert_source, EVP_PKEY* key,
                           std::string_view key_source);

// The identity a certificate carries (client_id.h): an aggregator's SAN URI, else a client's SAN
// URI, else its CN (a client); validated. PermissionDenied saying what is missing or wrong (two
// ids, ids of both roles, a malformed id). Does not verify the certificate.
Result<PeerIdentity> IdentityOfCertificate(X509* cert);
// The client id a client certificate carries; PermissionDenied for an aggregator's certificate
// and for anything IdentityOfCertificate refuses.
Result<std::string> ClientIdOfCertificate(X509* cert);

}  // namespace tributary::crypto_internal
